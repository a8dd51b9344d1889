// Command karpenter-convert migrates Karpenter manifests offline: v1alpha5
// Provisioners and v1alpha1 AWSNodeTemplates to v1beta1 or v1, v1beta1
// NodePools and EC2NodeClasses to v1. Its report subcommand lists the
// breaking changes of v1 that touch any set of manifests. It never talks to
// a cluster, so it is safe to run over a whole GitOps repository.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/karpenter-go/karpenter/pkg/convert/migrate"
)

// Exit codes.
const (
	exitOK              = 0
	exitError           = 1 // an object could not be converted, or input could not be read
	exitUsage           = 2
	exitNothingToDo     = 3 // no object needed converting
	exitFindings        = 4 // report: breaking changes or refusals found
	reportSubcommand    = "report"
	valuesSubcommand    = "values"
	defaultOutputFormat = "yaml"
)

const usageText = `karpenter-convert migrates Karpenter manifests to the v1 (or v1beta1) API, offline.

Usage:
  karpenter-convert -f FILE|DIR|- [-f ...] [-R] [--to v1|v1beta1] [--ignore-defaults]
                    [--node-role NAME] [--keep-instance-profile] [-o yaml|json]
  karpenter-convert report -f FILE|DIR|- [-f ...] [-R] [-o table|json]
  karpenter-convert values -f VALUES.yaml|- [-o yaml|json]

Converts:
  karpenter.sh/v1alpha5 Provisioner        -> NodePool (and an EC2NodeClass named after it
                                              when it has an inline spec.provider)
  karpenter.k8s.aws/v1alpha1 AWSNodeTemplate -> EC2NodeClass
  karpenter.sh/v1beta1 NodePool            -> karpenter.sh/v1 NodePool       (--to v1)
  karpenter.k8s.aws/v1beta1 EC2NodeClass   -> karpenter.k8s.aws/v1 EC2NodeClass (--to v1)

Input is multi-document YAML, JSON, or a List (kubectl get -o yaml), from files,
directories (-R descends) or stdin (-f -). Output goes to stdout in input order,
without status and server-populated metadata; other objects pass through unchanged
with a line on stderr. Notes about what was made explicit, dropped or split go to
stderr. Nothing is printed when any object fails; every failure is listed.

values rewrites a v0.3x values file of the karpenter Helm chart for the v1 chart:
settings.aws.* to settings.*, interruptionQueueName to interruptionQueue,
logConfig to logLevel/logOutputPaths, LEADER_ELECT to DISABLE_LEADER_ELECTION;
defaultInstanceProfile, the drift gate and the old webhook are dropped with a
note saying where they went (EC2NodeClass spec.role, always on, CEL in the CRDs).
report flags the same keys in values files and Flux HelmReleases.

Going to v1, kubelet settings move from each NodePool to its EC2NodeClass. Convert
NodePools together with their EC2NodeClasses: NodePools that share a class but set
different kubelets get a copy of the class each (named <class>-<nodepool>).

Flags:
%s
Exit status: 0 converted (or already current, printed unchanged), 1 error,
2 usage, 3 no Karpenter object in the input.
report exit status: 0 clean (nothing in v1 breaks these manifests, and they
convert), 1 could not read the input, 2 usage, 4 findings.

Examples:
  # Every alpha manifest of a directory tree to v1, node role filled in:
  karpenter-convert -f ./clusters/prod -R --node-role KarpenterNodeRole-prod > karpenter-v1.yaml

  # A Provisioner and its AWSNodeTemplate to v1beta1, without the old implicit requirements:
  karpenter-convert -f provisioner.yaml -f nodetemplate.yaml --to v1beta1 --ignore-defaults

  # The alpha objects in a cluster, converted to v1 (role placeholder filled by envsubst):
  kubectl get provisioners,awsnodetemplates -o yaml \
    | karpenter-convert -f - | KARPENTER_NODE_ROLE=my-node-role envsubst

  # Helm values of a v0.3x release to the v1 chart:
  karpenter-convert values -f karpenter-values.yaml > karpenter-values-v1.yaml

  # The breaking changes of v1 that touch a repository (workloads included):
  karpenter-convert report -f . -R
  karpenter-convert report -f . -R -o json | jq '.[] | select(.rule == "imds-hop-limit")'
`

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole command, with its streams passed in so tests drive it.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == valuesSubcommand {
		return runValues(args[1:], stdin, stdout, stderr)
	}
	report := len(args) > 0 && args[0] == reportSubcommand
	if report {
		args = args[1:]
	}
	fs := flag.NewFlagSet("karpenter-convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		files          stringList
		recursive      bool
		to             string
		ignoreDefaults bool
		nodeRole       string
		keepProfile    bool
		output         string
	)
	fs.Var(&files, "f", "file, directory or - (stdin) to read; repeatable")
	fs.Var(&files, "filename", "same as -f")
	fs.BoolVar(&recursive, "R", false, "descend into sub-directories of directories given with -f")
	fs.BoolVar(&recursive, "recursive", false, "same as -R")
	fs.StringVar(&to, "to", migrate.TargetV1, "target API version: v1 or v1beta1 (not for report)")
	fs.BoolVar(&ignoreDefaults, "ignore-defaults", false, "do not add the requirements the alpha webhook implied for Provisioners\n(kubernetes.io/os linux, kubernetes.io/arch amd64, capacity-type on-demand,\ninstance-category c/m/r and instance-generation > 2)")
	fs.StringVar(&nodeRole, "node-role", "", "IAM role for spec.role of EC2NodeClasses made from alpha objects\n(default the envsubst placeholder "+migrate.DefaultNodeRole+")")
	fs.BoolVar(&keepProfile, "keep-instance-profile", false, "keep an alpha object's instanceProfile as spec.instanceProfile (unmanaged)\ninstead of writing spec.role, for profiles other tooling (Terraform) owns")
	defaultFormat := defaultOutputFormat
	if report {
		defaultFormat = "table"
	}
	fs.StringVar(&output, "o", defaultFormat, "output format: yaml or json (report: table or json)")
	fs.StringVar(&output, "output", defaultFormat, "same as -o")
	fs.Usage = func() {
		var b strings.Builder
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(stderr)
		fmt.Fprintf(stderr, usageText, b.String())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "error: unexpected argument %q (input files go after -f)\n", fs.Arg(0))
		return exitUsage
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "error: must specify -f FILE|DIR|- (see --help)")
		return exitUsage
	}

	docs, empty, err := migrate.ReadPathsWithEmpty(files, recursive, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitError
	}

	if report {
		if output != "table" && output != migrate.FormatJSON {
			fmt.Fprintf(stderr, "error: -o %q: report prints table or json\n", output)
			return exitUsage
		}
		findings := append(migrate.EmptyFileFindings(empty), migrate.Report(docs)...)
		if err := migrate.WriteReport(stdout, findings, output); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return exitError
		}
		if len(findings) > 0 {
			return exitFindings
		}
		return exitOK
	}

	if to != migrate.TargetV1 && to != migrate.TargetV1beta1 {
		fmt.Fprintf(stderr, "error: --to %q: expected v1 or v1beta1\n", to)
		return exitUsage
	}
	if output != migrate.FormatYAML && output != migrate.FormatJSON {
		fmt.Fprintf(stderr, "error: -o %q: expected yaml or json\n", output)
		return exitUsage
	}
	res, err := migrate.Convert(docs, migrate.Options{To: to, IgnoreDefaults: ignoreDefaults, NodeRole: nodeRole, KeepInstanceProfile: keepProfile})
	if res != nil {
		for _, n := range res.Notes {
			fmt.Fprintf(stderr, "note: %s\n", n)
		}
	}
	switch {
	case errors.Is(err, migrate.ErrNothingToConvert):
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitNothingToDo
	case err != nil:
		var errs migrate.Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				fmt.Fprintf(stderr, "error: %v\n", e)
			}
			fmt.Fprintf(stderr, "error: %d object(s) could not be converted; nothing was written\n", len(errs))
		} else {
			fmt.Fprintf(stderr, "error: %v\n", err)
		}
		return exitError
	}
	if res.Converted == 0 {
		fmt.Fprintf(stderr, "note: nothing needed converting: every Karpenter object is already %s; printed unchanged\n", to)
	}
	if err := migrate.Write(stdout, res.Objects, output); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitError
	}
	return exitOK
}
