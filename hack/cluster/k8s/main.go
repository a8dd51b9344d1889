// Command k8s is a multi-call binary (busybox style) holding every control-plane
// component the project needs: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kubectl and kwok. The component is chosen by the name the
// binary is invoked under (a symlink in bin/) or by the first argument.
//
// One binary instead of six cuts link time and disk roughly by a factor of
// five: the linker is the slowest step once the packages are cached.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	kubectl "k8s.io/kubectl/pkg/cmd"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

var components = map[string]func() int{
	"etcd":           func() int { etcdmain.Main(os.Args); return 0 },
	"kube-apiserver": func() int { return cli.Run(apiserver.NewAPIServerCommand()) },
	"kube-controller-manager": func() int {
		return cli.Run(controllermanager.NewControllerManagerCommand())
	},
	"kube-scheduler": func() int { return cli.Run(scheduler.NewSchedulerCommand()) },
	"kubectl":        func() int { return cli.Run(kubectl.NewDefaultKubectlCommand()) },
	"kwok":           runKWOK,
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, ok := components[name]; !ok && len(os.Args) > 1 {
		// Invoked as "k8s <component> args...": shift the component name into argv[0]
		// so each component parses its own flags exactly as its standalone binary would.
		name = os.Args[1]
		os.Args = os.Args[1:]
	}
	run, ok := components[name]
	if !ok {
		names := make([]string, 0, len(components))
		for n := range components {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "usage: k8s <component> [args]; components: %v\n", names)
		os.Exit(2)
	}
	os.Exit(run())
}
