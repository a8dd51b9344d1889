// Package kubeflags parses the connection flags every kubectl-karpenter
// subcommand shares (--kubeconfig, --context, -n/--namespace) the way kubectl
// does: KUBECONFIG and ~/.kube/config through client-go's loading rules, then
// the flags on top. It also makes an unreachable cluster fail fast, naming
// the address it tried, instead of hanging on client-go's retries.
package kubeflags

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ReachTimeout bounds how long a subcommand waits for the apiserver before it
// reports the cluster unreachable.
const ReachTimeout = 5 * time.Second

// Flags are the kubectl connection flags. The zero value means "as kubectl
// would with no flags".
type Flags struct {
	Kubeconfig string
	Context    string
	Namespace  string
}

// Register adds --kubeconfig, --context, -n and --namespace to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Kubeconfig, "kubeconfig", f.Kubeconfig, "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&f.Context, "context", f.Context, "the kubeconfig context to use")
	fs.StringVar(&f.Namespace, "namespace", f.Namespace, "the namespace (default: the context's, then \"default\")")
	fs.StringVar(&f.Namespace, "n", f.Namespace, "shorthand for --namespace")
}

// Extract removes the connection flags from args wherever they appear (kubectl
// accepts them before or after the subcommand) and returns the rest.
func Extract(args []string) (Flags, []string, error) {
	var f Flags
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			rest = append(rest, a)
			continue
		}
		var dst *string
		switch {
		case name == "kubeconfig" && strings.HasPrefix(a, "--"):
			dst = &f.Kubeconfig
		case name == "context" && strings.HasPrefix(a, "--"):
			dst = &f.Context
		case name == "namespace" && strings.HasPrefix(a, "--"), name == "n" && !strings.HasPrefix(a, "--"):
			dst = &f.Namespace
		default:
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return f, nil, fmt.Errorf("flag %s needs a value", a)
			}
			i++
			value = args[i]
		}
		*dst = value
	}
	return f, rest, nil
}

func (f Flags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.Context}
	if f.Namespace != "" {
		overrides.Context.Namespace = f.Namespace
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// RESTConfig is the client configuration kubectl would use with these flags.
func (f Flags) RESTConfig() (*rest.Config, error) {
	cfg, err := f.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.UserAgent = "kubectl-karpenter"
	// A what-if tool should never make the cluster busier than kubectl would.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	return cfg, nil
}

// NamespaceOrDefault is -n, else the context's namespace, else "default".
func (f Flags) NamespaceOrDefault() string {
	ns, _, err := f.clientConfig().Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}

// CheckReachable asks the apiserver for /version within ReachTimeout and
// returns an error naming cfg.Host when it does not answer, so an unreachable
// cluster fails in seconds instead of after client-go's retries.
func CheckReachable(ctx context.Context, cfg *rest.Config) error {
	c := rest.CopyConfig(cfg)
	c.Timeout = ReachTimeout
	ctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	rc, err := rest.UnversionedRESTClientFor(withNegotiatedSerializer(c))
	if err != nil {
		return fmt.Errorf("cluster at %s: %w", cfg.Host, err)
	}
	if err := rc.Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return Unreachable(cfg.Host, err)
	}
	return nil
}

// Unreachable wraps err in a message naming the address tried.
func Unreachable(host string, err error) error {
	var ne net.Error
	var ue *url.Error
	reason := err.Error()
	if errors.As(err, &ue) && ue.Err != nil {
		reason = ue.Err.Error()
	} else if errors.As(err, &ne) && ne.Timeout() {
		reason = "timed out"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		reason = fmt.Sprintf("no answer within %s", ReachTimeout)
	}
	return fmt.Errorf("cannot reach the cluster at %s: %s", host, reason)
}
