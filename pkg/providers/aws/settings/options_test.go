package settings

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/karpenter-go/karpenter/pkg/operator/options"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func parse(t *testing.T, args []string, getenv func(string) string) (*Options, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := Register(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o, o.Validate()
}

func TestDefaultsAreUpstreams(t *testing.T) {
	o, err := parse(t, nil, env(map[string]string{"CLUSTER_NAME": "demo"}))
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]any{
		"cluster-name":                    {o.ClusterName, "demo"},
		"cluster-endpoint":                {o.ClusterEndpoint, ""},
		"cluster-ca-bundle":               {o.ClusterCABundle, ""},
		"isolated-vpc":                    {o.IsolatedVPC, false},
		"eks-control-plane":               {o.EKSControlPlane, false},
		"vm-memory-overhead-percent":      {o.VMMemoryOverheadPercent, 0.075},
		"interruption-queue":              {o.InterruptionQueue, ""},
		"reserved-enis":                   {o.ReservedENIs, 0},
		"disable-dry-run":                 {o.DisableDryRun, false},
		"ami-refresh-interval":            {o.AMIRefreshInterval, time.Minute},
		"subnet-refresh-interval":         {o.SubnetRefreshInterval, time.Minute},
		"security-group-refresh-interval": {o.SecurityGroupRefreshInterval, time.Minute},
		"enable-zonal-shift":              {o.EnableZonalShift, false},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
}

func TestEnvironmentThenFlagPrecedence(t *testing.T) {
	e := env(map[string]string{
		"CLUSTER_NAME":               "from-env",
		"CLUSTER_ENDPOINT":           "https://example.eks.amazonaws.com",
		"CLUSTER_CA_BUNDLE":          "Y2E=",
		"ISOLATED_VPC":               "true",
		"EKS_CONTROL_PLANE":          "true",
		"VM_MEMORY_OVERHEAD_PERCENT": "0.1",
		"INTERRUPTION_QUEUE":         "q",
		"RESERVED_ENIS":              "1",
		"DISABLE_DRY_RUN":            "true",
		"AMI_REFRESH_INTERVAL":       "5m",
		"SUBNET_REFRESH_INTERVAL":    "2m",
	})
	o, err := parse(t, []string{"--cluster-name=from-flag", "--reserved-enis=2", "--ami-refresh-interval=30s"}, e)
	if err != nil {
		t.Fatal(err)
	}
	if o.ClusterName != "from-flag" || o.ReservedENIs != 2 || o.AMIRefreshInterval != 30*time.Second {
		t.Errorf("flags must win over the environment: %+v", o)
	}
	if o.ClusterEndpoint != "https://example.eks.amazonaws.com" || o.ClusterCABundle != "Y2E=" || !o.IsolatedVPC || !o.EKSControlPlane ||
		o.VMMemoryOverheadPercent != 0.1 || o.InterruptionQueue != "q" || !o.DisableDryRun || o.SubnetRefreshInterval != 2*time.Minute {
		t.Errorf("environment not applied: %+v", o)
	}
}

func TestValidationNamesTheSetting(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"cluster name missing", nil, nil, []string{"cluster-name (CLUSTER_NAME) is required"}},
		{"bad env values", map[string]string{"CLUSTER_NAME": "c", "RESERVED_ENIS": "two", "ISOLATED_VPC": "yes please", "AMI_REFRESH_INTERVAL": "soon", "VM_MEMORY_OVERHEAD_PERCENT": "x"}, nil,
			[]string{`RESERVED_ENIS="two" is not an integer`, `ISOLATED_VPC="yes please" is not a boolean`, `AMI_REFRESH_INTERVAL="soon" is not a duration`, `VM_MEMORY_OVERHEAD_PERCENT="x" is not a number`}},
		{"out of range", map[string]string{"CLUSTER_NAME": "c"}, []string{"--vm-memory-overhead-percent=-0.5", "--reserved-enis=-1", "--subnet-refresh-interval=0s", "--ami-refresh-interval=-1m"},
			[]string{"vm-memory-overhead-percent (VM_MEMORY_OVERHEAD_PERCENT) -0.5", "reserved-enis (RESERVED_ENIS) -1", "subnet-refresh-interval (SUBNET_REFRESH_INTERVAL) 0s", "ami-refresh-interval (AMI_REFRESH_INTERVAL) -1m0s"}},
		{"endpoint not a URL", map[string]string{"CLUSTER_NAME": "c", "CLUSTER_ENDPOINT": "example.com"}, nil, []string{`cluster-endpoint (CLUSTER_ENDPOINT) "example.com"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse(t, c.args, env(c.env))
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// The core options register cluster-name too; registering both on one FlagSet
// must not panic, and the one value must reach both.
func TestClusterNameSharedWithCoreOptions(t *testing.T) {
	fs := flag.NewFlagSet("karpenter", flag.ContinueOnError)
	core, finish := options.Register(fs, env(map[string]string{"CLUSTER_NAME": "env"}))
	aws := Register(fs, env(map[string]string{"CLUSTER_NAME": "env"}))
	if err := fs.Parse([]string{"--cluster-name=shared"}); err != nil {
		t.Fatal(err)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	if err := aws.Validate(); err != nil {
		t.Fatal(err)
	}
	if core.ClusterName != "shared" || aws.ClusterName != "shared" {
		t.Errorf("core %q, aws %q, want both shared", core.ClusterName, aws.ClusterName)
	}
}

func TestLoadAWSConfigNeedsARegion(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	_, err := LoadAWSConfig(context.Background())
	if err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Fatalf("err = %v, want a message naming AWS_REGION", err)
	}
	t.Setenv("AWS_REGION", "eu-west-1")
	cfg, err := LoadAWSConfig(context.Background())
	if err != nil || cfg.Region != "eu-west-1" {
		t.Fatalf("cfg.Region = %q, err = %v", cfg.Region, err)
	}
}

// Upstream accepts a VM_MEMORY_OVERHEAD_PERCENT of 1 or more (it refuses only
// negative values); so does this controller, with a start-up warning naming
// the setting.
func TestVMMemoryOverheadOfOneOrMoreIsAcceptedWithAWarning(t *testing.T) {
	o, err := parse(t, []string{"--vm-memory-overhead-percent=1.5"}, env(map[string]string{"CLUSTER_NAME": "c"}))
	if err != nil {
		t.Fatalf("1.5 refused: %v", err)
	}
	w := strings.Join(o.SettingWarnings(), "\n")
	if !strings.Contains(w, "vm-memory-overhead-percent (VM_MEMORY_OVERHEAD_PERCENT) is 1.5") {
		t.Errorf("no warning names the setting: %q", w)
	}
	if o, err = parse(t, nil, env(map[string]string{"CLUSTER_NAME": "c"})); err != nil || len(o.SettingWarnings()) != 0 {
		t.Errorf("the default warns or fails: %v %v", o.SettingWarnings(), err)
	}
}
