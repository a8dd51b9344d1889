// Package env starts a real kube-apiserver and etcd (controller-runtime's envtest)
// on the binaries `make cluster-bins` builds from Go modules, installs the
// project's CRDs, and hands out clients. Every test that touches the Kubernetes
// API goes through it: behaviour is checked against the real API server's
// validation, defaulting, admission and CEL, never a fake client.
package env

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/karpenter-go/karpenter/pkg/apis"
)

// ModulePath is the root module; Root finds the directory holding its go.mod.
const ModulePath = "github.com/karpenter-go/karpenter"

// SchemeBuilders register the types the returned client understands.
var SchemeBuilders = []func(*runtime.Scheme) error{
	clientgoscheme.AddToScheme,
	apiextensionsv1.AddToScheme,
	apis.AddToScheme,
}

// Environment is a running API server with clients.
type Environment struct {
	Config     *rest.Config
	Client     client.Client
	KubeClient kubernetes.Interface
	Scheme     *runtime.Scheme
	// Root is the repository root.
	Root string

	testEnv *envtest.Environment
}

// Option adjusts the environment before it starts.
type Option func(*envtest.Environment)

// WithAPIServerArgs appends kube-apiserver flags, e.g. "--feature-gates=...".
func WithAPIServerArgs(args ...string) Option {
	return func(e *envtest.Environment) {
		a := e.ControlPlane.GetAPIServer().Configure()
		for _, arg := range args {
			k, v, _ := cutFlag(arg)
			a.Append(k, v)
		}
	}
}

// WithCRDs installs exactly these CRDs (deep copies) instead of every CRD in
// pkg/apis/crds; with none, the API server starts without custom resources.
// Start returns once they are established, as it does for the default set.
func WithCRDs(crds ...*apiextensionsv1.CustomResourceDefinition) Option {
	return func(e *envtest.Environment) {
		e.CRDDirectoryPaths = nil
		e.CRDs = make([]*apiextensionsv1.CustomResourceDefinition, 0, len(crds))
		for _, c := range crds {
			e.CRDs = append(e.CRDs, c.DeepCopy())
		}
	}
}

// Start runs etcd and kube-apiserver, installs every CRD in pkg/apis/crds and
// returns once clients can use them.
func Start(opts ...Option) (*Environment, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	assets, err := BinaryAssets(root)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	for _, add := range SchemeBuilders {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	crdDir := filepath.Join(root, "pkg", "apis", "crds")
	te := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		DownloadBinaryAssets:     false,
		CRDDirectoryPaths:        []string{crdDir},
		ErrorIfCRDPathMissing:    false,
		Scheme:                   scheme,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	for _, o := range opts {
		o(te)
	}
	cfg, err := te.Start()
	if err != nil {
		// envtest may have started etcd and kube-apiserver before failing (e.g. on a
		// bad CRD); stop them so no process outlives the test.
		_ = te.Stop()
		return nil, fmt.Errorf("starting envtest (etcd + kube-apiserver from %s): %w", assets, err)
	}
	// Tests create many objects quickly; the default client-side limit (5 qps) would
	// turn them into a rate-limiter benchmark.
	cfg.QPS, cfg.Burst = 500, 1000
	e := &Environment{Config: cfg, Scheme: scheme, Root: root, testEnv: te}
	if e.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		_ = te.Stop()
		return nil, err
	}
	if e.KubeClient, err = kubernetes.NewForConfig(cfg); err != nil {
		_ = te.Stop()
		return nil, err
	}
	return e, nil
}

// StartT is Start for one test: it fails the test on error and stops the
// environment when the test ends.
func StartT(t testing.TB, opts ...Option) *Environment {
	t.Helper()
	e, err := Start(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	return e
}

// Stop terminates the API server and etcd.
func (e *Environment) Stop() error { return e.testEnv.Stop() }

// Root walks up from the working directory to the repository root.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module "+ModulePath+"\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of %s above %s", ModulePath, dir)
		}
	}
}

// BinaryAssets is the directory with etcd, kube-apiserver and kubectl:
// KUBEBUILDER_ASSETS when set, else bin/k8s/current. A missing binary is one clear
// error naming the make target that builds it.
func BinaryAssets(root string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(root, "bin", "k8s", "current")
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("%s not found in %s: run `make cluster-bins` to build the control-plane binaries", b, dir)
		}
	}
	return dir, nil
}

func cutFlag(arg string) (string, string, bool) {
	arg = trimDashes(arg)
	for i := 0; i < len(arg); i++ {
		if arg[i] == '=' {
			return arg[:i], arg[i+1:], true
		}
	}
	return arg, "", false
}

func trimDashes(s string) string {
	for len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	return s
}

// Main is a test package's TestMain: it starts the environment into *target,
// runs the tests, stops the environment and exits with the tests' code. A
// failure to start ends the process with the reason (for a missing binary, the
// make target that builds it).
func Main(m *testing.M, target **Environment, opts ...Option) {
	MainWithSetup(m, target, nil, opts...)
}

// MainWithSetup is Main with a set-up step that runs once the environment is
// up and before the tests (e.g. serving an extra CRD version); its failure
// stops the environment and ends the process.
func MainWithSetup(m *testing.M, target **Environment, setup func(*Environment) error, opts ...Option) {
	e, err := Start(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*target = e
	if setup != nil {
		if err := setup(e); err != nil {
			fmt.Fprintln(os.Stderr, "setting up envtest:", err)
			_ = e.Stop()
			os.Exit(1)
		}
	}
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}
