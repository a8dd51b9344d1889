package v1

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Whatever the API server stored under spec.kubelet decodes, and encodes
// back to the same object.
func TestKubeletDecodesAnythingAndRoundTrips(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"maxPods":110,"clusterDNS":["10.0.0.10"],"evictionSoftGracePeriod":{"memory.available":"1m0s"}}`,
		`{"maxPods":"abc","podsPerCore":1.5,"cpuCFSQuota":"yes","evictionSoftGracePeriod":{"memory.available":"soon"}}`,
		`{"shutdownGracePeriod":"30s","featureGates":{"Foo":true},"x":[1,{"y":null}],"kubeReserved":{"cpu":"100m"}}`,
	} {
		var k KubeletConfiguration
		if err := json.Unmarshal([]byte(in), &k); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := json.Marshal(k)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var a, b any
		_ = json.Unmarshal([]byte(in), &a)
		_ = json.Unmarshal(out, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("round trip of %s gave %s", in, out)
		}
		if c := k.DeepCopy(); !reflect.DeepEqual(c, &k) {
			t.Errorf("deep copy of %s differs", in)
		}
	}
	var k KubeletConfiguration
	_ = json.Unmarshal([]byte(`{"maxPods":"abc","podsPerCore":4,"shutdownGracePeriod":"30s"}`), &k)
	if k.MaxPods != nil || k.PodsPerCore == nil || *k.PodsPerCore != 4 {
		t.Errorf("typed view: maxPods %v podsPerCore %v", k.MaxPods, k.PodsPerCore)
	}
	if got := k.PassThroughKeys(); !reflect.DeepEqual(got, []string{"shutdownGracePeriod"}) {
		t.Errorf("pass-through keys %v", got)
	}
}

func TestValidateKubelet(t *testing.T) {
	for in, want := range map[string][]string{
		`{"maxPods":110,"shutdownGracePeriod":"30s","containerLogMaxSize":"50Mi","evictionSoft":{"memory.available":"5%"},"evictionSoftGracePeriod":{"memory.available":"1m"}}`: nil,
		// A string maxPods and a reserved value that is not a quantity are
		// CEL expressions, compiled by the EC2NodeClass controller.
		`{"maxPods":"abc"}`: nil,
		`{"maxPods":"min(110, vcpus * 8)","kubeReserved":{"cpu":"vcpus * 30","memory":"1Gi"},"systemReserved":{"memory":"memory_mib / 100"}}`: nil,
		`{"maxPods":"vcpus","notAKubeletField":1}`: {`spec.kubelet: unknown field "notAKubeletField"`},
		`{"maxPods":1.5}`:                          {"spec.kubelet.maxPods"},
		`{"maxPods":-1}`:                           {"spec.kubelet.maxPods: -1 cannot be negative"},
		`{"notAKubeletField":1}`:                   {`spec.kubelet: unknown field "notAKubeletField"`},
		`{"shutdownGracePeriod":7}`:                {"spec.kubelet.shutdownGracePeriod: a number where the kubelet expects type string"},
		`{"imageGCHighThresholdPercent":101}`:      {"spec.kubelet.imageGCHighThresholdPercent: 101 must be between 0 and 100"},
		`{"imageGCHighThresholdPercent":50,"imageGCLowThresholdPercent":50}`:         {"spec.kubelet.imageGCHighThresholdPercent: 50 must be greater than imageGCLowThresholdPercent"},
		`{"evictionSoft":{"memory.available":"5%"}}`:                                 {"spec.kubelet.evictionSoft[memory.available]: has no matching evictionSoftGracePeriod"},
		`{"evictionSoftGracePeriod":{"memory.available":"1m"}}`:                      {"spec.kubelet.evictionSoftGracePeriod[memory.available]: has no matching evictionSoft"},
		`{"evictionHard":{"memory.free":"5%"}}`:                                      {`spec.kubelet.evictionHard: "memory.free" is not an eviction signal`},
		`{"evictionHard":{"memory.available":"150%"}}`:                               {"spec.kubelet.evictionHard[memory.available]"},
		`{"systemReserved":{"gpu":"1"}}`:                                             {`spec.kubelet.systemReserved: "gpu" is not a reservable resource`},
		`{"kubeReserved":{"cpu":"-1"}}`:                                              {"spec.kubelet.kubeReserved[cpu]: \"-1\" cannot be a negative resource quantity"},
		`{"kubeReserved":{"cpu":"lots"}}`:                                            nil,
		`{"systemReserved":{"cpu":"-vcpus"}}`:                                        {"spec.kubelet.systemReserved[cpu]: \"-vcpus\" cannot be a negative resource quantity"},
		`{"evictionMinimumReclaim":{"memory.free":"1Gi","nodefs.available":"-1Gi"}}`: {`spec.kubelet.evictionMinimumReclaim: "memory.free" is not an eviction signal`, "spec.kubelet.evictionMinimumReclaim[nodefs.available]"},
		`{"registerWithTaints":[]}`:                                                  {"spec.kubelet.registerWithTaints: cannot be set"},
	} {
		var k KubeletConfiguration
		if err := json.Unmarshal([]byte(in), &k); err != nil {
			t.Fatal(err)
		}
		errs := ValidateKubelet(&k)
		if len(want) == 0 {
			if len(errs) > 0 {
				t.Errorf("%s: unexpected errors %v", in, errs)
			}
			continue
		}
		for _, w := range want {
			found := false
			for _, e := range errs {
				found = found || strings.Contains(e, w)
			}
			if !found {
				t.Errorf("%s: no error containing %q in %v", in, w, errs)
			}
		}
	}
}

// A volumeSize the schema's pattern lets through without a number ("Ti")
// does not fail decoding the class and is written back as stored; valid
// sizes encode as before.
func TestBlockDeviceKeepsAnInvalidVolumeSize(t *testing.T) {
	for _, in := range []string{
		`{"volumeSize":"Ti","volumeType":"gp3"}`,
		`{"volumeSize":"T","snapshotID":"snap-1"}`,
		`{"volumeSize":"100Gi","iops":3000,"encrypted":true}`,
		`{"snapshotID":"snap-1","volumeInitializationRate":150}`,
	} {
		var b BlockDevice
		if err := json.Unmarshal([]byte(in), &b); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		var x, y any
		_ = json.Unmarshal([]byte(in), &x)
		_ = json.Unmarshal(out, &y)
		if !reflect.DeepEqual(x, y) {
			t.Errorf("round trip of %s gave %s", in, out)
		}
	}
	var b BlockDevice
	_ = json.Unmarshal([]byte(`{"volumeSize":"Ti"}`), &b)
	if b.VolumeSize != nil || b.InvalidVolumeSize != "Ti" {
		t.Errorf("decoded %+v", b)
	}
}

// A string maxPods is an expression: MaxPods stays nil, the string stays in
// Extra and is encoded back as stored; reserved values that are not
// quantities are expressions too.
func TestKubeletExpressions(t *testing.T) {
	for in, want := range map[string]struct {
		maxPods       string
		any, reserved bool
	}{
		`{"maxPods":110,"kubeReserved":{"cpu":"100m"}}`:                 {},
		`{"maxPods":"min(110, vcpus * 8)"}`:                             {maxPods: "min(110, vcpus * 8)", any: true},
		`{"maxPods":"10"}`:                                              {maxPods: "10", any: true},
		`{"kubeReserved":{"cpu":"vcpus * 30","memory":"1Gi"}}`:          {any: true, reserved: true},
		`{"systemReserved":{"memory":"memory_mib / 100"},"maxPods":20}`: {any: true, reserved: true},
	} {
		var k KubeletConfiguration
		if err := json.Unmarshal([]byte(in), &k); err != nil {
			t.Fatal(err)
		}
		expr, ok := k.MaxPodsExpression()
		if expr != want.maxPods || ok != (want.maxPods != "") {
			t.Errorf("%s: MaxPodsExpression %q %v", in, expr, ok)
		}
		if want.maxPods != "" && k.MaxPods != nil {
			t.Errorf("%s: MaxPods %d", in, *k.MaxPods)
		}
		if k.HasExpressions() != want.any || k.HasReservedExpressions() != want.reserved {
			t.Errorf("%s: HasExpressions %v HasReservedExpressions %v", in, k.HasExpressions(), k.HasReservedExpressions())
		}
		out, _ := json.Marshal(&k)
		var x, y any
		_ = json.Unmarshal([]byte(in), &x)
		_ = json.Unmarshal(out, &y)
		if !reflect.DeepEqual(x, y) {
			t.Errorf("%s encoded as %s", in, out)
		}
	}
	var nilKubelet *KubeletConfiguration
	if nilKubelet.HasExpressions() {
		t.Error("nil kubelet has expressions")
	}
}
