// Command kubectl-karpenter is a kubectl plugin (kubectl finds it on PATH as
// `kubectl karpenter`; it also runs alone) that asks Karpenter's own pure
// decision code about a cluster without changing it: `plan` is a what-if
// (the solver and the disruption pass on a snapshot with manifests applied in
// memory), `why` explains one pod, node or NodeClaim, `top` watches the fleet
// and its cost.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karpenter-go/karpenter/pkg/kubectl/kubeflags"
	"github.com/karpenter-go/karpenter/pkg/kubectl/plan"
	"github.com/karpenter-go/karpenter/pkg/kubectl/top"
	"github.com/karpenter-go/karpenter/pkg/kubectl/why"
)

// Subcommand is what every subcommand package exports as Run.
type Subcommand func(ctx context.Context, flags kubeflags.Flags, args []string, stdout, stderr io.Writer) int

// subcommands by name; each line registers one package.
var subcommands = map[string]Subcommand{
	"plan": plan.Run,
	"why":  why.Run,
	"top":  top.Run,
}

const usageText = `kubectl karpenter: ask Karpenter what it would do, and why, without changing anything.

Usage:
  kubectl karpenter plan [-f FILE|DIR]... [--delete -f FILE]... [--scale deploy/NAME=N]...
                         [--from-dump FILE] [-o table|json|yaml]
  kubectl karpenter why pod/NAME | node/NAME | nodeclaim/NAME
  kubectl karpenter top [--once]
  kubectl karpenter help [plan|why|top]

Commands:
  plan   what Karpenter would do next on this cluster (or a dump of one) with the given
         manifests applied in memory: NodeClaims it would launch (pool, instance type, zone,
         capacity type, $/h), nodes it would remove or replace and why, pods that would stay
         pending and why, budgets that block a step, and $/h before and after. Never writes.
  why    why a pod is pending (each NodePool's reason), why a node or NodeClaim is or is not
         a disruption candidate, and why its instance type was chosen over the next cheapest.
  top    a live view of nodes by NodePool: requests vs allocatable, type, capacity type,
         age, $/h, pool and cluster totals ('q' quits; --once prints one frame).

Connection flags (anywhere on the line, as kubectl): --kubeconfig PATH, --context NAME,
-n/--namespace NS. KUBECONFIG and ~/.kube/config are read as kubectl reads them.

Examples:
  # What would Karpenter launch for the pending pods right now?
  kubectl karpenter plan

  # Before applying new NodePools: what would change, and what would it cost?
  kubectl karpenter plan -f nodepools/

  # A migration: the old v1alpha5 Provisioners as they would run after conversion
  kubectl karpenter plan -f old-provisioners/ --delete -f nodepools/default.yaml

  # Scale a Deployment in memory and see the nodes it needs, as JSON
  kubectl karpenter plan --scale deploy/web=40 -n shop -o json

  # Plan offline, on a dump of a cluster
  kubectl get nodepools,nodeclaims,nodes,pods,daemonsets,pdb,deployments,kwoknodeclasses -A -o yaml > dump.yaml
  kubectl karpenter plan --from-dump dump.yaml

  # Why is this pod pending? Why is this node not consolidated?
  kubectl karpenter why pod/web-7c9f -n shop
  kubectl karpenter why node/ip-10-0-1-23.ec2.internal

  # Watch the fleet
  kubectl karpenter top
`

func main() {
	// The controller code the subcommands run logs for an operator; a CLI
	// says what matters in its output.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags, rest, err := kubeflags.Extract(args)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 2
	}
	if len(rest) == 0 {
		fmt.Fprint(stderr, usageText)
		return 2
	}
	switch name := rest[0]; name {
	case "help", "--help", "-h", "-help":
		if len(rest) > 1 {
			if sub, ok := subcommands[rest[1]]; ok {
				return sub(ctx, flags, []string{"--help"}, stdout, stderr)
			}
		}
		fmt.Fprint(stdout, usageText)
		return 0
	default:
		sub, ok := subcommands[name]
		if !ok {
			fmt.Fprintf(stderr, "error: unknown command %q\n\n%s", name, usageText)
			return 2
		}
		return sub(ctx, flags, rest[1:], stdout, stderr)
	}
}
