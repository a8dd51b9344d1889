package kwok_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
)

func parseProvider(t *testing.T, args []string, env map[string]string) *kwok.Provider {
	t.Helper()
	p := kwok.NewProvider()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	e := options.NewEnv(func(k string) string { return env[k] })
	p.AddFlags(fs, e)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := e.Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBundleOwnsTheCatalogSetting: INSTANCE_TYPES_FILE_PATH (or its flag, which
// wins) is the KWOK bundle's setting, and the bundle carries the provider,
// its NodeClass controller and its labels.
func TestBundleOwnsTheCatalogSetting(t *testing.T) {
	dir := t.TempDir()
	write := func(name, typ string) string {
		path := filepath.Join(dir, name)
		body := `[{"name":"` + typ + `","architecture":"amd64","operatingSystems":["linux"],"resources":{"cpu":"1","memory":"1Gi"},
		  "offerings":[{"Price":0.5,"Available":true,"Requirements":[
		    {"key":"karpenter.sh/capacity-type","operator":"In","values":["on-demand"]},
		    {"key":"topology.kubernetes.io/zone","operator":"In","values":["zone-x"]}]}]}]`
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	fromEnv, fromFlag := write("env.json", "env-1x-amd64-linux"), write("flag.json", "flag-1x-amd64-linux")
	deps := cloudprovider.Deps{Clock: clocktesting.NewFakeClock(time.Now())}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"environment":      {nil, "env-1x-amd64-linux"},
		"flag wins":        {[]string{"--instance-types-file-path=" + fromFlag}, "flag-1x-amd64-linux"},
		"embedded default": {[]string{"--instance-types-file-path="}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			p := parseProvider(t, tc.args, map[string]string{"INSTANCE_TYPES_FILE_PATH": fromEnv})
			b, err := p.New(t.Context(), deps)
			if err != nil {
				t.Fatal(err)
			}
			its, err := b.CloudProvider.GetInstanceTypes(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && (len(its) != 1 || its[0].Name != tc.want) {
				t.Fatalf("instance types %d (first %s), want only %s", len(its), its[0].Name, tc.want)
			}
			if tc.want == "" && len(its) != 144 {
				t.Fatalf("%d instance types, want the embedded 144", len(its))
			}
			if b.CloudProvider.Name() != p.Name() || p.Name() != "kwok" {
				t.Errorf("names %q and %q, want kwok", b.CloudProvider.Name(), p.Name())
			}
			if len(b.Controllers) != 1 {
				t.Errorf("%d controllers, want the KWOKNodeClass readiness controller", len(b.Controllers))
			}
			if b.NodeClassLabelKey != "karpenter.kwok.sh/kwoknodeclass" {
				t.Errorf("NodeClass label %q", b.NodeClassLabelKey)
			}
			if len(b.WellKnownLabels) == 0 || b.WellKnownLabels[0] != kwok.WellKnownLabels[0] {
				t.Errorf("well-known labels %v", b.WellKnownLabels)
			}
			if _, ok := b.CloudProvider.GetSupportedNodeClasses()[0].(*kwokv1alpha1.KWOKNodeClass); !ok {
				t.Errorf("NodeClass kinds %T", b.CloudProvider.GetSupportedNodeClasses())
			}
		})
	}
	p := parseProvider(t, nil, map[string]string{"INSTANCE_TYPES_FILE_PATH": filepath.Join(dir, "missing.json")})
	if _, err := p.New(t.Context(), deps); err == nil || !strings.Contains(err.Error(), "loading KWOK instance types") || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("missing catalog: error %v, want it to name the file", err)
	}
}
