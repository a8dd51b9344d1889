package awsemulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"k8s.io/utils/clock"
)

// Options configure an Emulator. The zero value is the default seed of the contract.
type Options struct {
	Region            string   // default "us-west-2"
	Zones             []string // default: <region>a .. <region>d
	ClusterName       string   // default "karpenter-demo"
	KubernetesVersion string   // EKS cluster version, default "1.34"
	AccountID         string   // default "123456789012"
	AccessKeyID       string   // default "AKIAEMULATOR00000000"
	SecretAccessKey   string   // default "emulator-secret-access-key"
	Listen            string   // default "127.0.0.1:0"

	// BootDelay is how long an instance stays pending (and shutting-down, stopping)
	// before it is running (terminated, stopped); 0: at the next observation.
	BootDelay time.Duration
	// Clock drives BootDelay and event times (default: the real clock).
	Clock clock.Clock
	// Kubeconfig, when set, is the cluster running instances join as Nodes (see
	// RegisterNodesTo).
	Kubeconfig string
}

func (o Options) withDefaults() Options {
	if o.Region == "" {
		o.Region = "us-west-2"
	}
	if len(o.Zones) == 0 {
		for _, s := range []string{"a", "b", "c", "d"} {
			o.Zones = append(o.Zones, o.Region+s)
		}
	} else {
		o.Zones = append([]string(nil), o.Zones...)
	}
	if o.ClusterName == "" {
		o.ClusterName = "karpenter-demo"
	}
	if o.KubernetesVersion == "" {
		o.KubernetesVersion = "1.34"
	}
	if o.AccountID == "" {
		o.AccountID = "123456789012"
	}
	if o.AccessKeyID == "" {
		o.AccessKeyID = "AKIAEMULATOR00000000"
	}
	if o.SecretAccessKey == "" {
		o.SecretAccessKey = "emulator-secret-access-key"
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	return o
}

// Emulator is a running AWS emulator: one HTTP listener for every service.
type Emulator struct {
	opts     Options
	listener net.Listener
	server   *http.Server
	endpoint string
	done     chan struct{} // closed by Close; wakes long polls and fault latencies
	closeOne sync.Once

	mu sync.Mutex // guards st
	st *state

	callsMu sync.Mutex
	calls   map[string]int // "service/Action" -> answered requests

	faults faultSet

	authz authz         // IAM policy enforcement (authz.go)
	nodes nodeRegistrar // see nodes.go
}

// Start seeds the state from opts and serves until Close.
func Start(opts Options) (*Emulator, error) {
	opts = opts.withDefaults()
	st, err := seed(opts)
	if err != nil {
		return nil, fmt.Errorf("seeding emulator state: %w", err)
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", opts.Listen, err)
	}
	e := &Emulator{
		opts:     opts,
		listener: ln,
		endpoint: "http://" + ln.Addr().String(),
		done:     make(chan struct{}),
		st:       st,
		calls:    map[string]int{},
	}
	if opts.Kubeconfig != "" {
		if err := e.registerNodesToKubeconfig(opts.Kubeconfig); err != nil {
			_ = ln.Close()
			return nil, err
		}
	}
	e.server = &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.server.Serve(ln) }()
	go e.lifecycleLoop()
	return e, nil
}

// StartForTest starts an emulator that closes when the test ends; it fails the test when
// the emulator cannot start.
func StartForTest(t testing.TB, opts Options) *Emulator {
	t.Helper()
	e, err := Start(opts)
	if err != nil {
		t.Fatalf("starting AWS emulator: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// Endpoint is the base URL of the emulator, e.g. "http://127.0.0.1:41234".
func (e *Emulator) Endpoint() string { return e.endpoint }

// Close stops serving; pending long polls return at once.
func (e *Emulator) Close() error {
	var err error
	e.closeOne.Do(func() {
		close(e.done)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err = e.server.Shutdown(ctx); err != nil {
			err = e.server.Close()
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	})
	return err
}

// Options returns the options with defaults filled in.
func (e *Emulator) Options() Options {
	o := e.opts
	o.Zones = append([]string(nil), o.Zones...)
	return o
}

// AWSConfig is an aws.Config reaching this emulator: region, static credentials,
// BaseEndpoint and HTTPClient(). The SDK's standard retryer stays on.
func (e *Emulator) AWSConfig() aws.Config {
	return aws.Config{
		Region:       e.opts.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(e.opts.AccessKeyID, e.opts.SecretAccessKey, ""),
		BaseEndpoint: aws.String(e.endpoint),
		HTTPClient:   HTTPClient(),
	}
}

// HTTPClient is an HTTP client for SDK clients talking to an emulator on loopback.
//
// Why: the SDK closes a request's body as soon as the response headers are in, while
// net/http's writer may still make its final read of that body (through WriteTo, which
// then reports io.EOF as an error); the transport then closes the connection under the
// response being read, and the SDK retries "use of closed network connection"
// (aws-sdk-go-v2 #2737). Against AWS the network latency hides the race; against a
// loopback emulator it hit about one request in four, making Calls counts flaky and
// non-idempotent calls repeat. Hiding WriteTo makes net/http read the body with Read,
// which the SDK's closed body answers with a plain EOF.
func HTTPClient() *http.Client {
	return &http.Client{Transport: readBodyTransport{http.DefaultTransport.(*http.Transport).Clone()}}
}

type readBodyTransport struct{ base http.RoundTripper }

func (t readBodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r = r.Clone(r.Context())
		r.Body = readOnlyBody{r.Body}
	}
	return t.base.RoundTrip(r)
}

// readOnlyBody exposes only Read and Close (no WriteTo).
type readOnlyBody struct{ io.ReadCloser }

// Env is the environment a process needs to reach this emulator through the SDK's
// standard settings (KEY=VALUE).
func (e *Emulator) Env() []string {
	return []string{
		"AWS_ENDPOINT_URL=" + e.endpoint,
		"AWS_REGION=" + e.opts.Region,
		"AWS_ACCESS_KEY_ID=" + e.opts.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + e.opts.SecretAccessKey,
	}
}

// Calls is how many requests of service ("ec2", "iam", "ssm", "pricing", "sqs", "eks")
// and action ("DescribeSubnets", ...) were answered, including rejected and faulted ones.
// An empty action sums over the service's actions.
func (e *Emulator) Calls(service, action string) int {
	e.callsMu.Lock()
	defer e.callsMu.Unlock()
	if action != "" {
		return e.calls[service+"/"+action]
	}
	n := 0
	for k, v := range e.calls {
		if strings.HasPrefix(k, service+"/") {
			n += v
		}
	}
	return n
}

// AllCalls returns every counter as "service/Action" -> count.
func (e *Emulator) AllCalls() map[string]int {
	e.callsMu.Lock()
	defer e.callsMu.Unlock()
	out := make(map[string]int, len(e.calls))
	for k, v := range e.calls {
		out[k] = v
	}
	return out
}

// ResetCalls zeroes every counter.
func (e *Emulator) ResetCalls() {
	e.callsMu.Lock()
	defer e.callsMu.Unlock()
	e.calls = map[string]int{}
}

func (e *Emulator) countCall(service, action string) {
	e.callsMu.Lock()
	defer e.callsMu.Unlock()
	e.calls[service+"/"+action]++
}

// removed deletes key from m and says whether it was there (the Remove* test hooks).
func removed[V any](m map[string]V, key string) bool {
	_, ok := m[key]
	delete(m, key)
	return ok
}

// sortedCopies returns clone of every value of m in key order: the snapshots tests read
// must not share maps or slices with the emulator's state.
func sortedCopies[V any](m map[string]*V, clone func(V) V) []V {
	out := make([]V, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, clone(*m[k]))
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
