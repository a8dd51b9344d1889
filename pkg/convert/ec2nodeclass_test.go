package convert_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	awsv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/convert"
)

const roundTrips = 1000

// TestEC2NodeClassV1beta1RoundTrip: every random v1beta1 object survives
// v1beta1 -> v1 -> v1beta1 unchanged, and the converter does not modify its
// input.
func TestEC2NodeClassV1beta1RoundTrip(t *testing.T) {
	g := newGen(1)
	for i := range roundTrips {
		in := g.V1beta1()
		expectRoundTrip(t, i, in, convert.EC2NodeClassV1beta1ToV1, convert.EC2NodeClassV1ToV1beta1, "v1beta1", "v1")
	}
}

// TestEC2NodeClassV1RoundTrip: every random v1 object survives
// v1 -> v1beta1 -> v1 unchanged, including kubelet and alias forms that
// v1beta1 has no field for.
func TestEC2NodeClassV1RoundTrip(t *testing.T) {
	g := newGen(2)
	var kubelets, pinned, explicitFamily, ssm, v1Only int
	for i := range roundTrips {
		in := g.V1()
		expectRoundTrip(t, i, in, convert.EC2NodeClassV1ToV1beta1, convert.EC2NodeClassV1beta1ToV1, "v1", "v1beta1")
		if in.Spec.Kubelet != nil {
			kubelets++
		}
		if in.Spec.ConnectionTracking != nil || in.Spec.NetworkInterfaces != nil || in.Spec.CapacityReservationSelectorTerms != nil {
			v1Only++
		}
		if slices.ContainsFunc(in.Spec.AMISelectorTerms, func(t awsv1.AMISelectorTerm) bool { return t.SSMParameter != "" }) {
			ssm++
		}
		if a := in.Alias(); a != nil {
			if a.Version != awsv1.AliasVersionLatest {
				pinned++
			}
			if in.Spec.AMIFamily != nil {
				explicitFamily++
			}
		}
	}
	// Guard against a generator that silently stopped covering the hard cases.
	for name, n := range map[string]int{"kubelet": kubelets, "pinned alias": pinned, "amiFamily beside alias": explicitFamily, "ssmParameter term": ssm, "v1-only field": v1Only} {
		if n < roundTrips/20 {
			t.Errorf("only %d of %d random objects had a %s", n, roundTrips, name)
		}
	}
}

func baseV1beta1(family string) *awsv1beta1.EC2NodeClass {
	return &awsv1beta1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1beta1.EC2NodeClassSpec{
			AMIFamily:                  ptr.To(family),
			Role:                       "KarpenterNodeRole",
			SubnetSelectorTerms:        []awsv1beta1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
			SecurityGroupSelectorTerms: []awsv1beta1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
			MetadataOptions:            &awsv1beta1.MetadataOptions{HTTPPutResponseHopLimit: ptr.To[int64](2)},
		},
	}
}

func TestEC2NodeClassV1beta1ToV1FamilyWithoutTermsBecomesAlias(t *testing.T) {
	for family, alias := range map[string]string{
		"AL2": "al2@latest", "AL2023": "al2023@latest", "Bottlerocket": "bottlerocket@latest",
		"Windows2019": "windows2019@latest", "Windows2022": "windows2022@latest",
	} {
		out, err := convert.EC2NodeClassV1beta1ToV1(baseV1beta1(family))
		if err != nil {
			t.Fatal(err)
		}
		if out.Spec.AMIFamily != nil {
			t.Errorf("%s: amiFamily = %q, want unset (implied by the alias)", family, *out.Spec.AMIFamily)
		}
		if want := []awsv1.AMISelectorTerm{{Alias: alias}}; !reflect.DeepEqual(out.Spec.AMISelectorTerms, want) {
			t.Errorf("%s: amiSelectorTerms = %+v, want %+v", family, out.Spec.AMISelectorTerms, want)
		}
		if out.APIVersion != "karpenter.k8s.aws/v1" || out.Kind != "EC2NodeClass" {
			t.Errorf("%s: TypeMeta = %+v", family, out.TypeMeta)
		}
		if got := *out.Spec.MetadataOptions.HTTPPutResponseHopLimit; got != 2 {
			t.Errorf("%s: metadataOptions must be copied as-is, hop limit = %d, want 2", family, got)
		}
	}
}

func TestEC2NodeClassV1beta1ToV1PinnedAliasVersion(t *testing.T) {
	in := baseV1beta1("AL2023")
	in.Annotations = map[string]string{awsv1.AnnotationAliasVersionCompatibilityKey: "v20240807"}
	out, err := convert.EC2NodeClassV1beta1ToV1(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Spec.AMISelectorTerms; len(got) != 1 || got[0].Alias != "al2023@v20240807" {
		t.Errorf("amiSelectorTerms = %+v, want the pinned alias al2023@v20240807", got)
	}
	if out.Annotations != nil {
		t.Errorf("compatibility annotation must not leak into v1, annotations = %v", out.Annotations)
	}
}

func TestEC2NodeClassV1beta1ToV1FamilyWithTermsKeepsFamily(t *testing.T) {
	in := baseV1beta1("Bottlerocket")
	in.Spec.AMISelectorTerms = []awsv1beta1.AMISelectorTerm{{Name: "bottlerocket-*", Owner: "amazon"}, {ID: "ami-123"}}
	out, err := convert.EC2NodeClassV1beta1ToV1(in)
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(out.Spec.AMIFamily, "") != "Bottlerocket" {
		t.Errorf("amiFamily = %v, want Bottlerocket", out.Spec.AMIFamily)
	}
	want := []awsv1.AMISelectorTerm{{Name: "bottlerocket-*", Owner: "amazon"}, {ID: "ami-123"}}
	if !reflect.DeepEqual(out.Spec.AMISelectorTerms, want) {
		t.Errorf("amiSelectorTerms = %+v, want %+v", out.Spec.AMISelectorTerms, want)
	}
}

func TestEC2NodeClassV1beta1ToV1UnknownFamilyBecomesCustom(t *testing.T) {
	for _, family := range []*string{ptr.To("Custom"), nil} {
		in := baseV1beta1("")
		in.Spec.AMIFamily = family
		in.Spec.AMISelectorTerms = []awsv1beta1.AMISelectorTerm{{ID: "ami-123"}}
		out, err := convert.EC2NodeClassV1beta1ToV1(in)
		if err != nil {
			t.Fatal(err)
		}
		if ptr.Deref(out.Spec.AMIFamily, "") != "Custom" {
			t.Errorf("amiFamily %v: converted amiFamily = %v, want Custom", family, out.Spec.AMIFamily)
		}
	}
}

func TestEC2NodeClassV1beta1ToV1UbuntuWithoutTermsOrVolumes(t *testing.T) {
	in := baseV1beta1("Ubuntu")
	out, err := convert.EC2NodeClassV1beta1ToV1(in)
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(out.Spec.AMIFamily, "") != "AL2" {
		t.Errorf("amiFamily = %v, want AL2", out.Spec.AMIFamily)
	}
	if got := out.Annotations[awsv1.AnnotationUbuntuCompatibilityKey]; got != "amiFamily,blockDeviceMappings,incompatible" {
		t.Errorf("ubuntu annotation = %q", got)
	}
	if want := []awsv1.AMISelectorTerm{{ID: convert.UbuntuPlaceholderAMIID}}; !reflect.DeepEqual(out.Spec.AMISelectorTerms, want) {
		t.Errorf("amiSelectorTerms = %+v, want %+v", out.Spec.AMISelectorTerms, want)
	}
	bdms := out.Spec.BlockDeviceMappings
	if len(bdms) != 1 || ptr.Deref(bdms[0].DeviceName, "") != "/dev/sda1" || !bdms[0].RootVolume ||
		!ptr.Deref(bdms[0].EBS.Encrypted, false) || ptr.Deref(bdms[0].EBS.VolumeType, "") != "gp3" ||
		bdms[0].EBS.VolumeSize.Cmp(resource.MustParse("20Gi")) != 0 {
		t.Errorf("blockDeviceMappings = %s, want the Ubuntu default root volume", mustJSON(bdms))
	}
	back, err := convert.EC2NodeClassV1ToV1beta1(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, withTypeMeta(in)) {
		t.Errorf("Ubuntu did not round trip:\n%s", diffJSON(withTypeMeta(in), back))
	}
}

func TestEC2NodeClassV1beta1ToV1UbuntuWithTermsAndVolumes(t *testing.T) {
	in := baseV1beta1("Ubuntu")
	in.Spec.AMISelectorTerms = []awsv1beta1.AMISelectorTerm{{Name: "ubuntu-eks/*", Owner: "099720109477"}}
	in.Spec.BlockDeviceMappings = []*awsv1beta1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/sda1"), EBS: &awsv1beta1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("100Gi"))}}}
	out, err := convert.EC2NodeClassV1beta1ToV1(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Annotations[awsv1.AnnotationUbuntuCompatibilityKey]; got != "amiFamily" {
		t.Errorf("ubuntu annotation = %q, want amiFamily", got)
	}
	if len(out.Spec.AMISelectorTerms) != 1 || out.Spec.AMISelectorTerms[0].Name != "ubuntu-eks/*" {
		t.Errorf("amiSelectorTerms = %+v", out.Spec.AMISelectorTerms)
	}
	if len(out.Spec.BlockDeviceMappings) != 1 || out.Spec.BlockDeviceMappings[0].EBS.VolumeSize.String() != "100Gi" {
		t.Errorf("blockDeviceMappings = %s", mustJSON(out.Spec.BlockDeviceMappings))
	}
}

func baseV1() *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "KarpenterNodeRole",
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{ID: "subnet-1"}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Name: "nodes"}},
		},
	}
}

func TestEC2NodeClassV1ToV1beta1Alias(t *testing.T) {
	cases := []struct {
		name        string
		family      *string
		alias       string
		wantFamily  string
		annotations map[string]string
	}{
		{"latest alias", nil, "al2023@latest", "AL2023", nil},
		{"pinned alias", nil, "bottlerocket@v1.20.3", "Bottlerocket", map[string]string{awsv1.AnnotationAliasVersionCompatibilityKey: "v1.20.3"}},
		{"Custom beside alias", ptr.To("Custom"), "al2@v20240625", "Custom", map[string]string{awsv1.AnnotationAliasCompatibilityKey: "al2@v20240625"}},
		{"matching family beside alias", ptr.To("Windows2022"), "windows2022@latest", "Windows2022", map[string]string{awsv1.AnnotationAliasCompatibilityKey: "windows2022@latest"}},
	}
	for _, c := range cases {
		in := baseV1()
		in.Spec.AMIFamily = c.family
		in.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: c.alias}}
		out, err := convert.EC2NodeClassV1ToV1beta1(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := ptr.Deref(out.Spec.AMIFamily, ""); got != c.wantFamily {
			t.Errorf("%s: amiFamily = %q, want %q", c.name, got, c.wantFamily)
		}
		if out.Spec.AMISelectorTerms != nil {
			t.Errorf("%s: alias must not become a v1beta1 term, got %+v", c.name, out.Spec.AMISelectorTerms)
		}
		if !reflect.DeepEqual(out.Annotations, c.annotations) {
			t.Errorf("%s: annotations = %v, want %v", c.name, out.Annotations, c.annotations)
		}
		if out.APIVersion != "karpenter.k8s.aws/v1beta1" {
			t.Errorf("%s: apiVersion = %q", c.name, out.APIVersion)
		}
	}
}

func TestEC2NodeClassV1ToV1beta1KubeletTravelsInAnnotation(t *testing.T) {
	in := baseV1()
	in.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
	in.Spec.Kubelet = &awsv1.KubeletConfiguration{ClusterDNS: []string{"10.0.0.10"}, MaxPods: ptr.To[int32](110)}
	out, err := convert.EC2NodeClassV1ToV1beta1(in)
	if err != nil {
		t.Fatal(err)
	}
	got := out.Annotations[awsv1.AnnotationKubeletCompatibilityKey]
	if got != `{"clusterDNS":["10.0.0.10"],"maxPods":110}` {
		t.Errorf("kubelet annotation = %q", got)
	}
	in2 := baseV1beta1("AL2023")
	in2.Annotations = map[string]string{awsv1.AnnotationKubeletCompatibilityKey: "{not json"}
	if _, err := convert.EC2NodeClassV1beta1ToV1(in2); err == nil || !strings.Contains(err.Error(), awsv1.AnnotationKubeletCompatibilityKey) {
		t.Errorf("a corrupt kubelet annotation must fail the conversion naming the annotation, got %v", err)
	}
}

func TestEC2NodeClassV1ToV1beta1UbuntuAnnotation(t *testing.T) {
	in := baseV1()
	in.Annotations = map[string]string{awsv1.AnnotationUbuntuCompatibilityKey: "amiFamily,blockDeviceMappings,incompatible", "keep": "me"}
	in.Spec.AMIFamily = ptr.To("AL2")
	in.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: convert.UbuntuPlaceholderAMIID}}
	in.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/sda1"), RootVolume: true}}
	out, err := convert.EC2NodeClassV1ToV1beta1(in)
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(out.Spec.AMIFamily, "") != "Ubuntu" || out.Spec.AMISelectorTerms != nil || out.Spec.BlockDeviceMappings != nil {
		t.Errorf("got amiFamily %v, terms %+v, bdms %+v; want Ubuntu without terms and block devices", out.Spec.AMIFamily, out.Spec.AMISelectorTerms, out.Spec.BlockDeviceMappings)
	}
	if !reflect.DeepEqual(out.Annotations, map[string]string{"keep": "me"}) {
		t.Errorf("annotations = %v, want only the user's", out.Annotations)
	}
}

func TestEC2NodeClassNil(t *testing.T) {
	if out, err := convert.EC2NodeClassV1beta1ToV1(nil); out != nil || err != nil {
		t.Errorf("nil v1beta1: got %v, %v", out, err)
	}
	if out, err := convert.EC2NodeClassV1ToV1beta1(nil); out != nil || err != nil {
		t.Errorf("nil v1: got %v, %v", out, err)
	}
}

func withTypeMeta(in *awsv1beta1.EC2NodeClass) *awsv1beta1.EC2NodeClass {
	out := in.DeepCopy()
	out.APIVersion, out.Kind = "karpenter.k8s.aws/v1beta1", "EC2NodeClass"
	return out
}

// expectRoundTrip converts in there and back and fails the test unless the
// result equals in and in itself is untouched. It returns the intermediate
// object for the caller's own counts. from and to name the
// two versions.
func expectRoundTrip[A interface{ DeepCopy() A }, B any](t *testing.T, i int, in A, there func(A) (B, error), back func(B) (A, error), from, to string) B {
	t.Helper()
	pristine := in.DeepCopy()
	mid, err := there(in)
	if err != nil {
		t.Fatalf("object %d: to %s: %v", i, to, err)
	}
	out, err := back(mid)
	if err != nil {
		t.Fatalf("object %d: back to %s: %v", i, from, err)
	}
	if !reflect.DeepEqual(in, pristine) {
		t.Fatalf("object %d: the conversion modified its input:\n%s", i, diffJSON(pristine, in))
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("object %d: %s -> %s -> %s changed the object\n%s: %s\n%s", i, from, to, from, to, mustJSON(mid), diffJSON(in, out))
	}
	return mid
}

func mustJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// diffJSON renders the lines of want and got that differ; when the JSON is
// equal the difference is in Go-only state (nil vs empty, pointer identity).
func diffJSON(want, got any) string {
	w, g := strings.Split(mustJSON(want), "\n"), strings.Split(mustJSON(got), "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl + "\n")
		}
	}
	if b.Len() == 0 {
		return "JSON equal; differs in nil-vs-empty or other Go-only state\nwant: " + mustJSON(want)
	}
	return b.String()
}

func TestEC2NodeClassV1beta1ToV1WindowsIgnoresPinnedVersion(t *testing.T) {
	in := baseV1beta1("Windows2019")
	in.Annotations = map[string]string{awsv1.AnnotationAliasVersionCompatibilityKey: "v20240625"}
	out, err := convert.EC2NodeClassV1beta1ToV1(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Spec.AMISelectorTerms; len(got) != 1 || got[0].Alias != "windows2019@latest" {
		t.Errorf("amiSelectorTerms = %+v, want windows2019@latest (v1 rejects pinned Windows aliases)", got)
	}
}

func TestEC2NodeClassSSMParameterTermsTravelInAnnotation(t *testing.T) {
	in := baseV1()
	in.Spec.AMIFamily = ptr.To("AL2023")
	in.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{SSMParameter: "/my/ami"}, {ID: "ami-1"}, {SSMParameter: "/my/other-ami"}}
	out, err := convert.EC2NodeClassV1ToV1beta1(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := []awsv1beta1.AMISelectorTerm{{ID: "ami-1"}}; !reflect.DeepEqual(out.Spec.AMISelectorTerms, want) {
		t.Errorf("v1beta1 amiSelectorTerms = %+v, want %+v", out.Spec.AMISelectorTerms, want)
	}
	if got := out.Annotations[awsv1.AnnotationSSMParameterCompatibilityKey]; got != `[{"index":0,"ssmParameter":"/my/ami"},{"index":2,"ssmParameter":"/my/other-ami"}]` {
		t.Errorf("ssm annotation = %s", got)
	}
	// Only ssmParameter terms: v1beta1 sees none, yet must not turn into an alias on the way back.
	in.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{SSMParameter: "/my/ami"}}
	mid, err := convert.EC2NodeClassV1ToV1beta1(in)
	if err != nil {
		t.Fatal(err)
	}
	back, err := convert.EC2NodeClassV1beta1ToV1(mid)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Spec.AMISelectorTerms, in.Spec.AMISelectorTerms) || ptr.Deref(back.Spec.AMIFamily, "") != "AL2023" {
		t.Errorf("got amiFamily %v terms %+v, want AL2023 with the ssmParameter term", back.Spec.AMIFamily, back.Spec.AMISelectorTerms)
	}
}

// BenchmarkEC2NodeClassConversion measures one v1beta1 -> v1 -> v1beta1 round
// trip, the work the conversion webhook does per object for a v1beta1 read.
func BenchmarkEC2NodeClassConversion(b *testing.B) {
	g := newGen(4)
	objs := make([]*awsv1beta1.EC2NodeClass, 256)
	for i := range objs {
		objs[i] = g.V1beta1()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		v1nc, err := convert.EC2NodeClassV1beta1ToV1(objs[i%len(objs)])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := convert.EC2NodeClassV1ToV1beta1(v1nc); err != nil {
			b.Fatal(err)
		}
	}
}
