package top

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"golang.org/x/term"

	"github.com/karpenter-go/karpenter/pkg/kubectl/catalog"
	"github.com/karpenter-go/karpenter/pkg/kubectl/kubeflags"
)

const usageText = `Usage: kubectl karpenter top [--once] [--min-interval DURATION] [--stats]

A live view of the fleet: nodes grouped by NodePool with their cpu and memory
requests against allocatable, instance type, capacity type, age and $/h, with
pool totals and the cluster total. Refreshed from watches; q (or Ctrl-C) quits.
NodeClaims not registered as nodes yet show as Launching or Registering rows.
The view fits the terminal: when nodes do not fit, each pool shows its share
and "… N more". Without a terminal (a pipe), one frame is printed, as --once.

Flags:
`

// SyncTimeout bounds how long --once waits for the initial lists.
const SyncTimeout = time.Minute

// Run is `kubectl karpenter top`.
func Run(ctx context.Context, kf kubeflags.Flags, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("top", flag.ContinueOnError)
	fs.SetOutput(stderr)
	once := fs.Bool("once", false, "print one frame (every node) and exit")
	minInterval := fs.Duration("min-interval", 250*time.Millisecond, "redraw at most this often; events in between are drawn together")
	stats := fs.Bool("stats", false, "on exit, print to stderr how many frames were drawn and how long a redraw took")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	for _, a := range args {
		if a == "--help" || a == "-h" || a == "-help" {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "error: top takes no arguments, got %q\n", fs.Args())
		return 2
	}
	if *minInterval < 0 {
		fmt.Fprintf(stderr, "error: --min-interval must not be negative, got %s\n", *minInterval)
		return 2
	}
	// client-go logs watch errors through klog, which would scribble over the
	// screen; top shows them in its title instead.
	klog.SetLogger(logr.Discard())

	cfg, err := kf.RESTConfig()
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	if err := kubeflags.CheckReachable(ctx, cfg); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	m := NewModel(PriceOf)
	m.SetCluster(clusterName(kf, cfg))
	dirty := make(chan struct{}, 1)
	w, err := Watch(ctx, cfg, m, func() {
		select {
		case dirty <- struct{}{}:
		default:
		}
	})
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	out, outTTY := stdout.(*os.File)
	outTTY = outTTY && term.IsTerminal(int(out.Fd()))
	inTTY := term.IsTerminal(int(os.Stdin.Fd()))
	if *once || !outTTY || !inTTY {
		return printOnce(ctx, m, w, out, outTTY, stdout, stderr)
	}
	l := newTermLoop(m, w, dirty, out, *minInterval)
	code := l.run(ctx, os.Stdin, w)
	if *stats {
		fmt.Fprintln(stderr, l.stats.String())
	}
	return code
}

func printOnce(ctx context.Context, m *Model, w *Watcher, out *os.File, outTTY bool, stdout, stderr io.Writer) int {
	sctx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	if err := w.WaitSynced(sctx); err != nil {
		fmt.Fprintln(stderr, "error: watching the cluster:", err)
		return 1
	}
	m.SetSynced()
	width := 0 // a pipe: no limit, as kubectl get
	if outTTY {
		if cols, _, err := term.GetSize(int(out.Fd())); err == nil {
			width = cols
		}
	} else if cols, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && cols > 0 {
		width = cols
	}
	lines := Render(m.Frame(time.Now()), Options{Width: width})
	if _, err := io.WriteString(stdout, strings.Join(lines, "\n")+"\n"); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	if !w.Karpenter() {
		fmt.Fprintln(stderr, "note: the cluster serves no karpenter.sh/v1 API; nodes are shown without NodePools and NodeClaims")
	}
	return 0
}

// PriceOf prices a node through the providers' reference catalogs
// (catalog.PriceOf), as plan and why do.
func PriceOf(n *corev1.Node) (float64, bool) { return catalog.PriceOf(n) }

// clusterName is the kubeconfig context in use, else the server address.
func clusterName(kf kubeflags.Flags, cfg *rest.Config) string {
	if kf.Context != "" {
		return kf.Context
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kf.Kubeconfig
	if raw, err := rules.Load(); err == nil && raw.CurrentContext != "" {
		return raw.CurrentContext
	}
	return cfg.Host
}
