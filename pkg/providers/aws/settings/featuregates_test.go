package settings

import (
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/karpenter-go/karpenter/pkg/operator/options"
)

// upstreamChartAWSFeatureGates is AWS_FEATURE_GATES as upstream's v1.15 chart
// (charts/karpenter/templates/deployment.yaml) renders it with its default
// values.
const upstreamChartAWSFeatureGates = "NodeClassCEL=false,DRANVIDIAGPU=false,DRAEFA=false,RebootForRepair=false"

func TestUpstreamChartAWSFeatureGatesParse(t *testing.T) {
	o, err := parse(t, nil, env(map[string]string{"CLUSTER_NAME": "demo", "AWS_FEATURE_GATES": upstreamChartAWSFeatureGates}))
	if err != nil {
		t.Fatalf("upstream's chart default AWS_FEATURE_GATES is refused: %v", err)
	}
	want := map[string]bool{"NodeClassCEL": false, "DRANVIDIAGPU": false, "DRAEFA": false, "RebootForRepair": false}
	if !reflect.DeepEqual(o.FeatureGates.Values, want) {
		t.Errorf("gates %v, want %v", o.FeatureGates.Values, want)
	}
	if w := o.FeatureGates.Warnings(); len(w) != 0 {
		t.Errorf("warnings %q for upstream's defaults", w)
	}
	if options.DefaultString(Gates) != upstreamChartAWSFeatureGates {
		t.Errorf("default %q, want upstream's %q", options.DefaultString(Gates), upstreamChartAWSFeatureGates)
	}
}

// An AWS gate that is enabled but not implemented is warned about, an
// unknown name too; neither stops start-up. NodeClassCEL and
// RebootForRepair are implemented, so enabling them warns about nothing. A
// malformed value stops start-up.
func TestAWSFeatureGatesWarn(t *testing.T) {
	o, err := parse(t, []string{"--aws-feature-gates=RebootForRepair=true,NodeClassCEL=true,DRAEFA=true,Warp=true"}, env(map[string]string{"CLUSTER_NAME": "demo"}))
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(o.FeatureGates.Warnings(), "\n")
	for _, want := range []string{
		"feature gate DRAEFA is enabled (AWS_FEATURE_GATES) but not implemented yet",
		"feature gate Warp (AWS_FEATURE_GATES) is unknown",
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings\n%s\nwant %q", w, want)
		}
	}
	for _, implemented := range []string{"RebootForRepair", "NodeClassCEL"} {
		if strings.Contains(w, "feature gate "+implemented) {
			t.Errorf("warnings\n%s\nname %s, which is implemented", w, implemented)
		}
	}
	if !o.FeatureGates.Values[FeatureNodeClassCEL] {
		t.Error("NodeClassCEL=true not read")
	}
	if n := len(o.FeatureGates.Warnings()); n != 2 {
		t.Errorf("%d warnings, want 2", n)
	}
	if _, err := parse(t, nil, env(map[string]string{"CLUSTER_NAME": "demo", "AWS_FEATURE_GATES": "DRAEFA=yes please"})); err == nil || !strings.Contains(err.Error(), "AWS_FEATURE_GATES") {
		t.Errorf("malformed gates: %v, want an error naming AWS_FEATURE_GATES", err)
	}
}

func TestZonalShiftAndSecurityGroupInterval(t *testing.T) {
	o, err := parse(t, nil, env(map[string]string{"CLUSTER_NAME": "demo", "ENABLE_ZONAL_SHIFT": "true", "SECURITY_GROUP_REFRESH_INTERVAL": "3m"}))
	if err != nil {
		t.Fatal(err)
	}
	if o.SecurityGroupRefreshInterval != 3*time.Minute {
		t.Errorf("security group interval %s", o.SecurityGroupRefreshInterval)
	}
	if !o.EnableZonalShift {
		t.Error("ENABLE_ZONAL_SHIFT=true not read")
	}
	// Zonal shifts are followed: the setting draws no warning.
	if w := o.SettingWarnings(); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
	d, _ := parse(t, nil, env(map[string]string{"CLUSTER_NAME": "demo"}))
	if w := d.SettingWarnings(); len(w) != 0 {
		t.Errorf("defaults warn: %q", w)
	}
	if _, err := parse(t, []string{"--security-group-refresh-interval=0s"}, env(map[string]string{"CLUSTER_NAME": "demo"})); err == nil || !strings.Contains(err.Error(), "SECURITY_GROUP_REFRESH_INTERVAL") {
		t.Errorf("zero interval: %v", err)
	}
}

// Every flag and environment variable of upstream v1.15.2's AWS options
// (github.com/aws/karpenter-provider-aws pkg/operator/options/options.go,
// Options.AddFlags) is registered here, under the same names.
func TestEveryUpstreamAWSFlagAndVariableIsRegistered(t *testing.T) {
	upstream := map[string]string{ // flag: environment variable
		"cluster-ca-bundle":               "CLUSTER_CA_BUNDLE",
		"cluster-name":                    "CLUSTER_NAME",
		"cluster-endpoint":                "CLUSTER_ENDPOINT",
		"isolated-vpc":                    "ISOLATED_VPC",
		"eks-control-plane":               "EKS_CONTROL_PLANE",
		"vm-memory-overhead-percent":      "VM_MEMORY_OVERHEAD_PERCENT",
		"interruption-queue":              "INTERRUPTION_QUEUE",
		"reserved-enis":                   "RESERVED_ENIS",
		"disable-dry-run":                 "DISABLE_DRY_RUN",
		"enable-zonal-shift":              "ENABLE_ZONAL_SHIFT",
		"ami-refresh-interval":            "AMI_REFRESH_INTERVAL",
		"subnet-refresh-interval":         "SUBNET_REFRESH_INTERVAL",
		"security-group-refresh-interval": "SECURITY_GROUP_REFRESH_INTERVAL",
		"aws-feature-gates":               "AWS_FEATURE_GATES",
	}
	read := map[string]bool{}
	fs := flag.NewFlagSet("karpenter", flag.ContinueOnError)
	Register(fs, func(name string) string { read[name] = true; return "" })
	for f, e := range upstream {
		if fs.Lookup(f) == nil {
			t.Errorf("upstream flag --%s is not registered", f)
		}
		if !read[e] {
			t.Errorf("upstream environment variable %s (--%s) is not read", e, f)
		}
	}
}
