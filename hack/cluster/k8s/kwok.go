package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/config"
	kwokcmd "sigs.k8s.io/kwok/pkg/kwok/cmd"
	"sigs.k8s.io/kwok/pkg/log"
	"sigs.k8s.io/kwok/pkg/utils/signals"
)

// runKWOK starts the KWOK controller (fake kubelets). The standalone kwok binary
// finds its lifecycle stages in a config file that kwokctl normally writes; when the
// caller passes no --config we write KWOK's own embedded default stages (node
// initialisation, lease heartbeat, pod ready/complete/delete) so that a fake Node
// becomes Ready and the pods bound to it run.
func runKWOK() int {
	if !hasFlag(os.Args[1:], "config") {
		path, err := writeDefaultStages()
		if err != nil {
			os.Stderr.WriteString("kwok: writing default stages: " + err.Error() + "\n")
			return 1
		}
		os.Args = append(os.Args, "--config="+path)
	}
	flagset := pflag.NewFlagSet("global", pflag.ContinueOnError)
	flagset.ParseErrorsAllowlist.UnknownFlags = true
	flagset.Usage = func() {}
	ctx := signals.SetupSignalContext()
	ctx, logger := log.InitFlags(ctx, flagset)
	ctx, err := config.InitFlags(ctx, flagset)
	if err != nil {
		logger.Error("Init config flags", "err", err)
		return 1
	}
	command := kwokcmd.NewCommand(ctx)
	// Kubernetes' verflag package registers a non-bool --version flag on pflag's
	// global set at init; cobra's own version handling would then fail on every
	// run, so the kwok command in this binary has no --version.
	command.Version = ""
	command.PersistentFlags().AddFlagSet(flagset)
	if err := command.ExecuteContext(ctx); err != nil {
		logger.Error("Execute exit", "err", err)
		return 1
	}
	return 0
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--"+name || strings.HasPrefix(a, "--"+name+"=") {
			return true
		}
	}
	return false
}

func writeDefaultStages() (string, error) {
	docs := []string{
		nodefast.DefaultNodeInit,
		nodeheartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	}
	f, err := os.CreateTemp("", "kwok-stages-*.yaml")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(docs, "\n---\n")); err != nil {
		return "", err
	}
	return filepath.Abs(f.Name())
}
