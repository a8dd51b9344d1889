package plan

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/karpenter-go/karpenter/pkg/kubectl/kubeflags"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
)

const usageText = `kubectl karpenter plan: what Karpenter would do next, computed by its own code, without writing anything.

Usage:
  kubectl karpenter plan [-f FILE|DIR]... [--delete -f FILE|DIR]... [--scale deploy/NAME=N]...
                         [--from-dump FILE] [-o table|json|yaml] [--max-steps N]

It takes a snapshot of the cluster (list calls only; or of --from-dump, a
'kubectl get ... -o yaml' output), applies the manifests in memory (new or
changed NodePools and NodeClasses, Deployments, PDBs, ...; v1alpha5 and v1beta1
Karpenter manifests are converted to v1 first, as karpenter-convert would),
deletes the --delete objects (a NodePool's nodes are drained), scales the
Deployments, then runs the provisioner's solver on the pending pods and the
disruption passes one after the other, each decision applied in memory.

It prints the NodeClaims it would launch (pool, type, zone, capacity type,
$/h), the nodes it would remove or replace and why, the pods that would stay
pending and why, the nodes a method wants but a rule or budget keeps (and the
budgets that allow nothing), and $/h before and after.

A manifest that the CRDs would reject (schema or CEL rule) fails the plan
before anything is computed, naming file, object and field.

Flags:
%s
Examples:
  kubectl karpenter plan
  kubectl karpenter plan -f nodepools/ -o yaml
  kubectl karpenter plan -f old-provisioners/            # v1alpha5 Provisioners, converted
  kubectl karpenter plan --delete -f nodepools/spot.yaml  # what happens to its nodes
  kubectl karpenter plan --scale deploy/web=100 -n shop
  kubectl karpenter plan --from-dump dump.yaml -o json | jq '.launches | length'
`

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// rewriteDelete turns "--delete -f X" and "--delete X" into "--delete-file X".
func rewriteDelete(args []string) ([]string, error) {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] != "--delete" && args[i] != "-delete" {
			out = append(out, args[i])
			continue
		}
		j := i + 1
		if j < len(args) && (args[j] == "-f" || args[j] == "--filename") {
			j++
		}
		if j >= len(args) {
			return nil, errors.New("--delete needs a file: --delete -f FILE")
		}
		out = append(out, "--delete-file", args[j])
		i = j
	}
	return out, nil
}

// Run is the `kubectl karpenter plan` subcommand.
func Run(ctx context.Context, flags kubeflags.Flags, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var files, deletes, scales stringList
	fs.Var(&files, "f", "manifest file or directory to apply in memory (repeatable; - for stdin)")
	fs.Var(&files, "filename", "same as -f")
	fs.Var(&deletes, "delete-file", "manifest whose objects are deleted in memory (written --delete -f FILE)")
	fs.Var(&scales, "scale", "deploy/NAME=REPLICAS, in the -n namespace (repeatable)")
	dump := fs.String("from-dump", "", "plan on a 'kubectl get ... -o yaml' dump instead of the live cluster")
	output := fs.String("o", "table", "output: table, json or yaml")
	maxSteps := fs.Int("max-steps", DefaultMaxSteps, "most disruption decisions to chain")
	nodeClass := fs.String("node-class", "", "KIND/NAME: point the -f NodePools at this NodeClass (e.g. KWOKNodeClass/default to try converted AWS Provisioners on a KWOK cluster)")
	usage := func() {
		var b strings.Builder
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		fmt.Fprintf(stdout, usageText, b.String())
	}
	args, err := rewriteDelete(args)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return 0
		}
		fmt.Fprintln(stderr, "error:", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "error: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	switch *output {
	case "table", "json", "yaml":
	default:
		fmt.Fprintf(stderr, "error: -o %q: want table, json or yaml\n", *output)
		return 2
	}
	p, err := Make(ctx, Request{Flags: flags, Files: files, Deletes: deletes, Scales: scales, Dump: *dump, MaxSteps: *maxSteps, NodeClass: *nodeClass, Stdin: os.Stdin})
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	if err := Write(stdout, p, *output); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

// Request is everything a plan is made from.
type Request struct {
	Flags   kubeflags.Flags
	Files   []string
	Deletes []string
	Scales  []string
	// Dump replaces the live cluster when set.
	Dump     string
	MaxSteps int
	// NodeClass ("KIND/NAME") retargets the applied NodePools.
	NodeClass string
	Stdin     io.Reader
	Options   Options
}

// Make reads and validates the manifests (before touching the cluster, so a
// bad manifest fails fast), takes the snapshot, edits it and computes the plan.
func Make(ctx context.Context, r Request) (*Plan, error) {
	var applied, deleted []snapshot.Manifest
	var notes []string
	if len(r.Files) > 0 {
		ms, n, err := snapshot.ReadManifests(ctx, r.Files, r.Stdin)
		if err != nil {
			return nil, err
		}
		applied, notes = ms, append(notes, n...)
		if r.NodeClass != "" {
			n, err := snapshot.Retarget(applied, r.NodeClass)
			if err != nil {
				return nil, err
			}
			notes = append(notes, n...)
		}
	}
	if len(r.Deletes) > 0 {
		ms, _, err := snapshot.ReadManifests(ctx, r.Deletes, r.Stdin)
		if err != nil {
			return nil, err
		}
		deleted = ms
	}
	ns := r.Flags.NamespaceOrDefault()
	var scales []snapshot.Scale
	for _, s := range r.Scales {
		sc, err := snapshot.ParseScale(s, ns)
		if err != nil {
			return nil, err
		}
		scales = append(scales, sc)
	}
	snap, err := Take(ctx, r.Flags, r.Dump, r.Stdin)
	if err != nil {
		return nil, err
	}
	opts := r.Options
	if opts.MaxSteps == 0 {
		opts.MaxSteps = r.MaxSteps
	}
	return PlanSnapshot(ctx, snap, applied, deleted, scales, notes, opts)
}

// Take is the live cluster's snapshot, or the dump's when dump is set.
func Take(ctx context.Context, flags kubeflags.Flags, dump string, stdin io.Reader) (*snapshot.Snapshot, error) {
	if dump != "" {
		return snapshot.FromDump(dump, stdin)
	}
	cfg, err := flags.RESTConfig()
	if err != nil {
		return nil, err
	}
	return snapshot.FromCluster(ctx, cfg)
}

// PlanSnapshot edits the snapshot and computes the plan on it.
func PlanSnapshot(ctx context.Context, snap *snapshot.Snapshot, applied, deleted []snapshot.Manifest, scales []snapshot.Scale, notes []string, opts Options) (*Plan, error) {
	before, _ := CostOf(snap.Cluster(clock.RealClock{}), opts.Providers)
	if err := snap.Apply(applied); err != nil {
		return nil, err
	}
	if err := snap.Delete(deleted); err != nil {
		return nil, err
	}
	for _, sc := range scales {
		if err := snap.Scale(sc); err != nil {
			return nil, err
		}
	}
	snap.Notes = append(snap.Notes, notes...)
	cp, err := CloudProvider(ctx, snap, opts.Providers, clock.RealClock{})
	if err != nil {
		return nil, err
	}
	opts.Provider = cp.Name()
	return NewPlanner(snap, cp, opts).Compute(ctx, before)
}

// Write prints the plan as a table, JSON or YAML.
func Write(w io.Writer, p *Plan, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	case "yaml":
		b, err := yaml.Marshal(p)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return writeTable(w, p)
}
