package why

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/utils/clock"

	"github.com/karpenter-go/karpenter/pkg/kubectl/kubeflags"
	"github.com/karpenter-go/karpenter/pkg/kubectl/plan"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
)

const usageText = `kubectl karpenter why: why a pod is pending, why a node is (not) being disrupted.

Usage:
  kubectl karpenter why pod/NAME [-n NAMESPACE] [--from-dump FILE]
  kubectl karpenter why node/NAME | nodeclaim/NAME [--from-dump FILE]

pod/NAME: for a pending pod, each NodePool's reason in plain words
(requirements, taints, limits, topology, size) and, when no instance type is
big enough, the closest one and what it lacks; for a pod that could be placed,
where Karpenter would put it.

node/NAME, nodeclaim/NAME: whether the next disruption passes would remove or
replace it and why, or why not (the same words as its DisruptionBlocked
condition and events), and why its instance type was chosen over the cheaper
ones and the next cheapest.

Flags:
%s
Examples:
  kubectl karpenter why pod/web-7c9f4-x2x8q -n shop
  kubectl karpenter why node/default-abc12
  kubectl karpenter why nodeclaim/default-abc12 --from-dump dump.yaml
`

// Run is the `kubectl karpenter why` subcommand.
func Run(ctx context.Context, flags kubeflags.Flags, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("why", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dump := fs.String("from-dump", "", "explain on a 'kubectl get ... -o yaml' dump instead of the live cluster")
	var target string
	var rest []string
	for _, a := range args {
		if target == "" && strings.Contains(a, "/") && !strings.HasPrefix(a, "-") {
			target = a
			continue
		}
		rest = append(rest, a)
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			var b strings.Builder
			fs.SetOutput(&b)
			fs.PrintDefaults()
			fmt.Fprintf(stdout, usageText, b.String())
			return 0
		}
		fmt.Fprintln(stderr, "error:", err)
		return 2
	}
	if target == "" && fs.NArg() > 0 {
		target = fs.Arg(0)
	}
	kind, name, ok := strings.Cut(target, "/")
	if !ok || name == "" {
		fmt.Fprintln(stderr, "error: want pod/NAME, node/NAME or nodeclaim/NAME")
		return 2
	}
	snap, err := plan.Take(ctx, flags, *dump, os.Stdin)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	var text string
	switch strings.ToLower(kind) {
	case "pod", "pods", "po":
		text, err = Pod(ctx, snap, flags.NamespaceOrDefault(), name)
	case "node", "nodes", "no":
		text, err = Node(ctx, snap, name)
	case "nodeclaim", "nodeclaims", "nodeclaim.karpenter.sh":
		text, err = Node(ctx, snap, name)
	default:
		err = fmt.Errorf("%q: want pod/NAME, node/NAME or nodeclaim/NAME", target)
	}
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	fmt.Fprint(stdout, text)
	return 0
}

func planner(ctx context.Context, snap *snapshot.Snapshot) (*plan.Planner, error) {
	cp, err := plan.CloudProvider(ctx, snap, nil, clock.RealClock{})
	if err != nil {
		return nil, err
	}
	return plan.NewPlanner(snap, cp, plan.Options{Provider: cp.Name()}), nil
}
