package aws_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const baseV1 = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: base}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
`

const baseV1beta1 = `
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata: {name: base}
spec:
  amiFamily: AL2
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
`

const baseV1alpha1 = `
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: base}
spec:
  subnetSelector: {karpenter.sh/discovery: demo}
  securityGroupSelector: {karpenter.sh/discovery: demo}
`

// invalidCase is a valid base manifest changed by a JSON merge patch (RFC
// 7386: objects merge, null deletes, lists are replaced) into one the API
// server must reject with a cause on field whose message contains message.
type invalidCase struct {
	name    string
	base    string
	patch   string
	field   string
	message string
}

// repeatJSON renders a JSON list of n copies of item.
func repeatJSON(n int, item string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
}

var invalidCases = []invalidCase{
	// role / instanceProfile
	{"neither role nor instanceProfile", baseV1, `{"spec":{"role":null}}`, "spec", "must specify exactly one of ['role', 'instanceProfile']"},
	{"both role and instanceProfile", baseV1, `{"spec":{"instanceProfile":"profile"}}`, "spec", "must specify exactly one of ['role', 'instanceProfile']"},
	{"empty role", baseV1, `{"spec":{"role":""}}`, "spec.role", "role cannot be empty"},
	{"empty instanceProfile", baseV1, `{"spec":{"role":null,"instanceProfile":""}}`, "spec.instanceProfile", "instanceProfile cannot be empty"},

	// amiSelectorTerms and amiFamily
	{"alias beside another term", baseV1, `{"spec":{"amiSelectorTerms":[{"alias":"al2023@latest"},{"id":"ami-0123"}]}}`, "spec.amiSelectorTerms", "a term with 'alias' must be the only term"},
	{"alias with id in one term", baseV1, `{"spec":{"amiSelectorTerms":[{"alias":"al2023@latest","id":"ami-0123"}]}}`, "spec.amiSelectorTerms", "'alias' is mutually exclusive"},
	{"alias with tags in one term", baseV1, `{"spec":{"amiSelectorTerms":[{"alias":"al2023@latest","tags":{"a":"b"}}]}}`, "spec.amiSelectorTerms", "'alias' is mutually exclusive"},
	{"alias with owner in one term", baseV1, `{"spec":{"amiSelectorTerms":[{"alias":"al2023@latest","owner":"amazon"}]}}`, "spec.amiSelectorTerms", "'alias' is mutually exclusive"},
	{"id with name", baseV1, `{"spec":{"amiFamily":"AL2","amiSelectorTerms":[{"id":"ami-0123","name":"foo"}]}}`, "spec.amiSelectorTerms", "'id' is mutually exclusive"},
	{"id with tags", baseV1, `{"spec":{"amiFamily":"AL2","amiSelectorTerms":[{"name":"foo"},{"id":"ami-0123","tags":{"a":"b"}}]}}`, "spec.amiSelectorTerms", "'id' is mutually exclusive"},
	{"id with owner", baseV1, `{"spec":{"amiFamily":"AL2","amiSelectorTerms":[{"id":"ami-0123","owner":"self"}]}}`, "spec.amiSelectorTerms", "'id' is mutually exclusive"},
	{"empty ami term", baseV1, `{"spec":{"amiFamily":"AL2","amiSelectorTerms":[{}]}}`, "spec.amiSelectorTerms", "each term must set at least one of ['tags', 'id', 'name', 'alias', 'ssmParameter']"},
	{"owner alone", baseV1, `{"spec":{"amiFamily":"AL2","amiSelectorTerms":[{"owner":"amazon"}]}}`, "spec.amiSelectorTerms", "each term must set at least one of"},
	{"alias family differs from amiFamily", baseV1, `{"spec":{"amiFamily":"AL2","amiSelectorTerms":[{"alias":"al2023@latest"}]}}`, "spec", "amiFamily must be 'AL2023' or 'Custom'"},
	{"alias al2 with amiFamily AL2023", baseV1, `{"spec":{"amiFamily":"AL2023","amiSelectorTerms":[{"alias":"al2@latest"}]}}`, "spec", "amiFamily must be 'AL2' or 'Custom'"},
	{"alias bottlerocket with amiFamily Windows2022", baseV1, `{"spec":{"amiFamily":"Windows2022","amiSelectorTerms":[{"alias":"bottlerocket@latest"}]}}`, "spec", "amiFamily must be 'Bottlerocket' or 'Custom'"},
	{"alias windows2019 with amiFamily AL2", baseV1, `{"spec":{"amiFamily":"AL2","amiSelectorTerms":[{"alias":"windows2019@latest"}]}}`, "spec", "amiFamily must be 'Windows2019' or 'Custom'"},
	{"alias windows2022 with amiFamily AL2", baseV1, `{"spec":{"amiFamily":"AL2","amiSelectorTerms":[{"alias":"windows2022@latest"}]}}`, "spec", "amiFamily must be 'Windows2022' or 'Custom'"},
	{"alias without version", baseV1, `{"spec":{"amiSelectorTerms":[{"alias":"al2023"}]}}`, "spec.amiSelectorTerms[0].alias", "must be in the format 'family@version'"},
	{"alias of unknown family", baseV1, `{"spec":{"amiSelectorTerms":[{"alias":"ubuntu@latest"}]}}`, "spec.amiSelectorTerms[0].alias", "family is not supported"},
	{"windows alias pinned", baseV1, `{"spec":{"amiSelectorTerms":[{"alias":"windows2022@v20240101"}]}}`, "spec.amiSelectorTerms[0].alias", "windows families may only use the version 'latest'"},
	{"windows2025 alias pinned", baseV1, `{"spec":{"amiSelectorTerms":[{"alias":"windows2025@v20250101"}]}}`, "spec.amiSelectorTerms[0].alias", "windows families may only use the version 'latest'"},
	{"alias windows2025 with amiFamily Windows2022", baseV1, `{"spec":{"amiFamily":"Windows2022","amiSelectorTerms":[{"alias":"windows2025@latest"}]}}`, "spec", "amiFamily must be 'Windows2025' or 'Custom'"},
	{"alias windows2026", baseV1, `{"spec":{"amiSelectorTerms":[{"alias":"windows2026@latest"}]}}`, "spec.amiSelectorTerms[0].alias", "must be one of 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'"},
	{"alias too long", baseV1, `{"spec":{"amiSelectorTerms":[{"alias":"al2023@v2024062500000000000000000"}]}}`, "spec.amiSelectorTerms[0].alias", "may not be more than 30"},
	{"no amiFamily without alias", baseV1, `{"spec":{"amiSelectorTerms":[{"id":"ami-0123"}]}}`, "spec", "amiFamily must be specified when amiSelectorTerms does not contain an alias"},
	{"amiSelectorTerms missing", baseV1, `{"spec":{"amiFamily":"AL2","amiSelectorTerms":null}}`, "spec.amiSelectorTerms", "Required value"},
	{"amiSelectorTerms empty", baseV1, `{"spec":{"amiFamily":"AL2","amiSelectorTerms":[]}}`, "spec.amiSelectorTerms", "at least 1 items"},
	{"31 amiSelectorTerms", baseV1, `{"spec":{"amiFamily":"AL2","amiSelectorTerms":` + repeatJSON(31, `{"name":"foo"}`) + `}}`, "spec.amiSelectorTerms", "must have at most 30 items"},
	{"ami id pattern", baseV1, `{"spec":{"amiFamily":"AL2","amiSelectorTerms":[{"id":"abc-123"}]}}`, "spec.amiSelectorTerms[0].id", "should match 'ami-[0-9a-z]+'"},
	{"Ubuntu is not a v1 family", baseV1, `{"spec":{"amiFamily":"Ubuntu","amiSelectorTerms":[{"id":"ami-0123"}]}}`, "spec.amiFamily", "Unsupported value: \"Ubuntu\""},

	// subnetSelectorTerms
	{"subnetSelectorTerms empty", baseV1, `{"spec":{"subnetSelectorTerms":[]}}`, "spec.subnetSelectorTerms", "subnetSelectorTerms cannot be empty"},
	{"subnetSelectorTerms missing", baseV1, `{"spec":{"subnetSelectorTerms":null}}`, "spec.subnetSelectorTerms", "Required value"},
	{"31 subnetSelectorTerms", baseV1, `{"spec":{"subnetSelectorTerms":` + repeatJSON(31, `{"id":"subnet-1"}`) + `}}`, "spec.subnetSelectorTerms", "must have at most 30 items"},
	{"empty subnet term", baseV1, `{"spec":{"subnetSelectorTerms":[{"id":"subnet-1"},{}]}}`, "spec.subnetSelectorTerms", "each term must set at least one of ['tags', 'id']"},
	{"subnet id with tags in every term", baseV1, `{"spec":{"subnetSelectorTerms":[{"id":"subnet-2","tags":{"a":"c"}},{"id":"subnet-1","tags":{"a":"b"}}]}}`, "spec.subnetSelectorTerms", "'id' is mutually exclusive"},
	{"subnet id pattern", baseV1, `{"spec":{"subnetSelectorTerms":[{"id":"sg-123"}]}}`, "spec.subnetSelectorTerms[0].id", "should match 'subnet-[0-9a-z]+'"},
	{"subnet tag with empty value", baseV1, `{"spec":{"subnetSelectorTerms":[{"tags":{"a":""}}]}}`, "spec.subnetSelectorTerms[0].tags", "empty tag keys or values aren't supported"},
	{"subnet term with 21 tags", baseV1, `{"spec":{"subnetSelectorTerms":[{"tags":` + manyTags(21) + `}]}}`, "spec.subnetSelectorTerms[0].tags", "must have at most 20 items"},

	// securityGroupSelectorTerms
	{"securityGroupSelectorTerms empty", baseV1, `{"spec":{"securityGroupSelectorTerms":[]}}`, "spec.securityGroupSelectorTerms", "securityGroupSelectorTerms cannot be empty"},
	{"31 securityGroupSelectorTerms", baseV1, `{"spec":{"securityGroupSelectorTerms":` + repeatJSON(31, `{"name":"nodes"}`) + `}}`, "spec.securityGroupSelectorTerms", "must have at most 30 items"},
	{"security group id with name", baseV1, `{"spec":{"securityGroupSelectorTerms":[{"id":"sg-1","name":"nodes"}]}}`, "spec.securityGroupSelectorTerms", "'id' is mutually exclusive"},
	{"security group name with tags", baseV1, `{"spec":{"securityGroupSelectorTerms":[{"name":"nodes","tags":{"a":"b"}}]}}`, "spec.securityGroupSelectorTerms", "'name' is mutually exclusive"},
	{"empty security group term", baseV1, `{"spec":{"securityGroupSelectorTerms":[{}]}}`, "spec.securityGroupSelectorTerms", "each term must set at least one of ['tags', 'id', 'name']"},
	{"security group id pattern", baseV1, `{"spec":{"securityGroupSelectorTerms":[{"id":"subnet-1"}]}}`, "spec.securityGroupSelectorTerms[0].id", "should match 'sg-[0-9a-z]+'"},

	// tags
	{"tag kubernetes.io/cluster/*", baseV1, `{"spec":{"tags":{"kubernetes.io/cluster/demo":"owned"}}}`, "spec.tags", "'kubernetes.io/cluster/*'"},
	{"tag eks:eks-cluster-name", baseV1, `{"spec":{"tags":{"eks:eks-cluster-name":"demo"}}}`, "spec.tags", "'eks:eks-cluster-name'"},
	{"tag karpenter.sh/nodepool", baseV1, `{"spec":{"tags":{"karpenter.sh/nodepool":"default"}}}`, "spec.tags", "'karpenter.sh/nodepool'"},
	{"tag karpenter.sh/nodeclaim", baseV1, `{"spec":{"tags":{"karpenter.sh/nodeclaim":"default-abc"}}}`, "spec.tags", "'karpenter.sh/nodeclaim'"},
	{"tag karpenter.k8s.aws/ec2nodeclass", baseV1, `{"spec":{"tags":{"karpenter.k8s.aws/ec2nodeclass":"default"}}}`, "spec.tags", "'karpenter.k8s.aws/ec2nodeclass'"},
	{"empty tag key", baseV1, `{"spec":{"tags":{"":"x"}}}`, "spec.tags", "empty tag keys aren't supported"},

	// metadataOptions
	{"httpTokens enum", baseV1, `{"spec":{"metadataOptions":{"httpTokens":"sometimes"}}}`, "spec.metadataOptions.httpTokens", "Unsupported value"},
	{"httpEndpoint enum", baseV1, `{"spec":{"metadataOptions":{"httpEndpoint":"on"}}}`, "spec.metadataOptions.httpEndpoint", "Unsupported value"},
	{"hop limit above 64", baseV1, `{"spec":{"metadataOptions":{"httpPutResponseHopLimit":65}}}`, "spec.metadataOptions.httpPutResponseHopLimit", "should be less than or equal to 64"},
	{"hop limit below 1", baseV1, `{"spec":{"metadataOptions":{"httpPutResponseHopLimit":0}}}`, "spec.metadataOptions.httpPutResponseHopLimit", "should be greater than or equal to 1"},

	// blockDeviceMappings and instance store
	{"two root volumes", baseV1, `{"spec":{"blockDeviceMappings":[{"deviceName":"/dev/xvda","rootVolume":true,"ebs":{"volumeSize":"20Gi"}},{"deviceName":"/dev/xvdb","rootVolume":true,"ebs":{"volumeSize":"20Gi"}}]}}`, "spec.blockDeviceMappings", "at most one entry with rootVolume"},
	{"ebs without size or snapshot", baseV1, `{"spec":{"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeType":"gp3"}}]}}`, "spec.blockDeviceMappings[0].ebs", "snapshotID or volumeSize must be defined"},
	{"volume larger than 64Ti", baseV1, `{"spec":{"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"65Ti"}}]}}`, "spec.blockDeviceMappings[0].ebs.volumeSize", "should match"},
	{"volume size in Mi", baseV1, `{"spec":{"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"512Mi"}}]}}`, "spec.blockDeviceMappings[0].ebs.volumeSize", "should match"},
	{"volumeType enum", baseV1, `{"spec":{"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"20Gi","volumeType":"gp4"}}]}}`, "spec.blockDeviceMappings[0].ebs.volumeType", "Unsupported value"},
	{"51 blockDeviceMappings", baseV1, `{"spec":{"blockDeviceMappings":` + repeatJSON(51, `{"deviceName":"/dev/xvdb","ebs":{"volumeSize":"1Gi"}}`) + `}}`, "spec.blockDeviceMappings", "must have at most 50 items"},
	{"instanceStorePolicy enum", baseV1, `{"spec":{"instanceStorePolicy":"RAID1"}}`, "spec.instanceStorePolicy", "Unsupported value"},

	// kubelet: free-form (the controller checks it), but an object
	{"kubelet not an object", baseV1, `{"spec":{"kubelet":"maxPods=10"}}`, "spec.kubelet", "must be of type object"},

	// fields added in v1.x
	{"volumeInitializationRate without snapshotID", baseV1, `{"spec":{"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"20Gi","volumeInitializationRate":200}}]}}`, "spec.blockDeviceMappings[0].ebs", "volumeInitializationRate needs a non-empty snapshotID"},
	{"volumeInitializationRate with empty snapshotID", baseV1, `{"spec":{"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"snapshotID":"","volumeInitializationRate":200}}]}}`, "spec.blockDeviceMappings[0].ebs", "volumeInitializationRate needs a non-empty snapshotID"},
	{"volumeInitializationRate above 300", baseV1, `{"spec":{"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"snapshotID":"snap-1","volumeInitializationRate":301}}]}}`, "spec.blockDeviceMappings[0].ebs.volumeInitializationRate", "should be less than or equal to 300"},
	{"volumeInitializationRate below 100", baseV1, `{"spec":{"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"snapshotID":"snap-1","volumeInitializationRate":99}}]}}`, "spec.blockDeviceMappings[0].ebs.volumeInitializationRate", "should be greater than or equal to 100"},
	{"connectionTracking empty", baseV1, `{"spec":{"connectionTracking":{}}}`, "spec.connectionTracking", "set at least one of tcpEstablishedTimeout, udpStreamTimeout or udpTimeout"},
	{"tcpEstablishedTimeout below 60", baseV1, `{"spec":{"connectionTracking":{"tcpEstablishedTimeout":59}}}`, "spec.connectionTracking.tcpEstablishedTimeout", "should be greater than or equal to 60"},
	{"tcpEstablishedTimeout above 432000", baseV1, `{"spec":{"connectionTracking":{"tcpEstablishedTimeout":432001}}}`, "spec.connectionTracking.tcpEstablishedTimeout", "should be less than or equal to 432000"},
	{"udpStreamTimeout above 180", baseV1, `{"spec":{"connectionTracking":{"udpStreamTimeout":181}}}`, "spec.connectionTracking.udpStreamTimeout", "should be less than or equal to 180"},
	{"udpTimeout below 30", baseV1, `{"spec":{"connectionTracking":{"udpTimeout":29}}}`, "spec.connectionTracking.udpTimeout", "should be greater than or equal to 30"},
	{"cpuOptions enum", baseV1, `{"spec":{"cpuOptions":{"nestedVirtualization":"on"}}}`, "spec.cpuOptions.nestedVirtualization", "Unsupported value"},
	{"enclaveOptions without enabled", baseV1, `{"spec":{"enclaveOptions":{}}}`, "spec.enclaveOptions.enabled", "Required value"},
	{"negative ipPrefixCount", baseV1, `{"spec":{"ipPrefixCount":-1}}`, "spec.ipPrefixCount", "should be greater than or equal to 0"},
	{"placementGroupSelector empty", baseV1, `{"spec":{"placementGroupSelector":{}}}`, "spec.placementGroupSelector", "must set one of ['name', 'id']"},
	{"placementGroupSelector name and id", baseV1, `{"spec":{"placementGroupSelector":{"name":"pg","id":"pg-1"}}}`, "spec.placementGroupSelector", "'name' and 'id' are mutually exclusive"},
	{"placementGroupSelector id pattern", baseV1, `{"spec":{"placementGroupSelector":{"id":"sg-1"}}}`, "spec.placementGroupSelector.id", "should match '^pg-[0-9a-z]+$'"},
	{"placementGroupSelector empty name", baseV1, `{"spec":{"placementGroupSelector":{"name":""}}}`, "spec.placementGroupSelector.name", "should be at least 1 chars long"},
	{"networkInterfaces without primary", baseV1, `{"spec":{"networkInterfaces":[{"networkCardIndex":0,"deviceIndex":1,"interfaceType":"interface"}]}}`, "spec.networkInterfaces", "must include the primary interface"},
	{"networkInterfaces duplicate pair", baseV1, `{"spec":{"networkInterfaces":[{"networkCardIndex":0,"deviceIndex":0,"interfaceType":"interface"},{"networkCardIndex":0,"deviceIndex":0,"interfaceType":"efa-only"}]}}`, "spec.networkInterfaces", "may appear once"},
	{"networkInterfaces two efa-only on a card", baseV1, `{"spec":{"networkInterfaces":[{"networkCardIndex":0,"deviceIndex":0,"interfaceType":"interface"},{"networkCardIndex":1,"deviceIndex":0,"interfaceType":"efa-only"},{"networkCardIndex":1,"deviceIndex":1,"interfaceType":"efa-only"}]}}`, "spec.networkInterfaces", "at most one efa-only"},
	{"networkInterfaces type enum", baseV1, `{"spec":{"networkInterfaces":[{"networkCardIndex":0,"deviceIndex":0,"interfaceType":"efa"}]}}`, "spec.networkInterfaces[0].interfaceType", "Unsupported value"},
	{"networkInterfaces missing deviceIndex", baseV1, `{"spec":{"networkInterfaces":[{"networkCardIndex":0,"interfaceType":"interface"}]}}`, "spec.networkInterfaces[0].deviceIndex", "Required value"},

	// v1beta1
	{"v1beta1 Custom without amiSelectorTerms", baseV1beta1, `{"spec":{"amiFamily":"Custom"}}`, "spec", "amiSelectorTerms is required when amiFamily == 'Custom'"},
	{"v1beta1 amiFamily missing", baseV1beta1, `{"spec":{"amiFamily":null}}`, "spec.amiFamily", "Required value"},
	{"v1beta1 amiFamily enum", baseV1beta1, `{"spec":{"amiFamily":"Windows2025"}}`, "spec.amiFamily", "Unsupported value"},
	{"v1beta1 has no alias", baseV1beta1, `{"spec":{"amiSelectorTerms":[{"alias":"al2@latest"}]}}`, "spec.amiSelectorTerms", "each term must set at least one of ['tags', 'id', 'name']"},
	{"v1beta1 id with name", baseV1beta1, `{"spec":{"amiSelectorTerms":[{"id":"ami-1","name":"x"}]}}`, "spec.amiSelectorTerms", "'id' is mutually exclusive"},
	{"v1beta1 neither role nor instanceProfile", baseV1beta1, `{"spec":{"role":null}}`, "spec", "must specify exactly one of ['role', 'instanceProfile']"},
	{"v1beta1 tag karpenter.sh/managed-by", baseV1beta1, `{"spec":{"tags":{"karpenter.sh/managed-by":"demo"}}}`, "spec.tags", "'karpenter.sh/managed-by'"},
	{"v1beta1 tag kubernetes.io/cluster/*", baseV1beta1, `{"spec":{"tags":{"kubernetes.io/cluster/demo":"owned"}}}`, "spec.tags", "'kubernetes.io/cluster/*'"},
	{"v1beta1 31 subnetSelectorTerms", baseV1beta1, `{"spec":{"subnetSelectorTerms":` + repeatJSON(31, `{"id":"subnet-1"}`) + `}}`, "spec.subnetSelectorTerms", "must have at most 30 items"},

	// v1alpha1 AWSNodeTemplate (structural schema only)
	{"v1alpha1 amiFamily enum", baseV1alpha1, `{"spec":{"amiFamily":"AL2023"}}`, "spec.amiFamily", "Unsupported value"},
	{"v1alpha1 hop limit", baseV1alpha1, `{"spec":{"metadataOptions":{"httpPutResponseHopLimit":100}}}`, "spec.metadataOptions.httpPutResponseHopLimit", "should be less than or equal to 64"},
}

func manyTags(n int) string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("tag-%d", i)] = "v"
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// TestInvalidManifestsAreRejected sends each invalid case to the API server
// and asserts the rejection names the field. Each base manifest is also
// applied unchanged first, so a case cannot pass because its base was
// already invalid.
func TestInvalidManifestsAreRejected(t *testing.T) {
	for i, base := range []string{baseV1, baseV1beta1, baseV1alpha1} {
		u := parseManifest(t, base)
		u.SetName(fmt.Sprintf("valid-base-%d", i))
		if err := create(t, u); err != nil {
			t.Fatalf("base manifest %s is not valid: %v", u.GetAPIVersion(), err)
		}
	}
	if len(invalidCases) < 40 {
		t.Fatalf("only %d invalid cases", len(invalidCases))
	}
	for i, c := range invalidCases {
		t.Run(c.name, func(t *testing.T) {
			u := parseManifest(t, c.base)
			patch := map[string]any{}
			if err := json.Unmarshal([]byte(c.patch), &patch); err != nil {
				t.Fatalf("bad patch: %v", err)
			}
			u.Object = mergePatch(u.Object, patch).(map[string]any)
			u.SetName(fmt.Sprintf("invalid-%d", i))
			expectRejected(t, create(t, u), c.field, c.message)
		})
	}
}

// acceptedCases are manifests the v1 schema accepts as upstream's does,
// including where upstream's rules are looser than their messages suggest:
// the selector-term exclusivity rules on subnets, security groups and
// capacity reservations reject only when every term mixes fields, ids are
// matched unanchored, ssmParameter may sit beside other fields, the role may
// change, and spec.kubelet is not checked by the API server at all (the
// controller reports a bad one on the ValidationSucceeded condition).
var acceptedCases = []string{
	`{"spec":{"subnetSelectorTerms":[{"tags":{"a":"b"}},{"id":"subnet-1","tags":{"a":"b"}}]}}`,
	`{"spec":{"securityGroupSelectorTerms":[{"tags":{"a":"b"}},{"id":"sg-1","name":"nodes"}]}}`,
	`{"spec":{"securityGroupSelectorTerms":[{"id":"sg-2"},{"name":"nodes","tags":{"a":"b"}}]}}`,
	`{"spec":{"capacityReservationSelectorTerms":[{"tags":{"a":"b"}},{"id":"cr-1","ownerID":"123456789012"}]}}`,
	`{"spec":{"subnetSelectorTerms":[{"id":"my-subnet-1"}],"securityGroupSelectorTerms":[{"id":"xsg-1"}]}}`,
	`{"spec":{"amiFamily":"AL2","amiSelectorTerms":[{"id":"ami-0123 "}]}}`,
	`{"spec":{"amiSelectorTerms":[{"alias":"al2023@latest","ssmParameter":"/my/ami"}]}}`,
	`{"spec":{"amiFamily":"AL2","amiSelectorTerms":[{"ssmParameter":"/my/ami","name":"foo"}]}}`,
	`{"spec":{"amiFamily":"AL2","amiSelectorTerms":[{"ssmParameter":"/my/ami","id":"ami-0123"}]}}`,
	`{"spec":{"amiFamily":"AL2","amiSelectorTerms":[{"ssmParameter":"` + strings.Repeat("p", 2100) + `"}]}}`,
	`{"spec":{"amiFamily":"Custom","amiSelectorTerms":[{"alias":"al2@latest"}]}}`,
	`{"spec":{"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"64T"}},{"deviceName":"/dev/xvdb","ebs":{"volumeSize":"57Ti"}}]}}`,
	`{"spec":{"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"snapshotID":"snap-1","volumeInitializationRate":300}}]}}`,
	`{"spec":{"kubelet":{"imageGCHighThresholdPercent":50,"imageGCLowThresholdPercent":50}}}`,
	`{"spec":{"kubelet":{"imageGCHighThresholdPercent":101}}}`,
	`{"spec":{"kubelet":{"evictionSoft":{"memory.available":"5%"}}}}`,
	`{"spec":{"kubelet":{"evictionHard":{"memory.free":"5%"}}}}`,
	`{"spec":{"kubelet":{"systemReserved":{"gpu":"1"},"kubeReserved":{"cpu":"-1"}}}}`,
	`{"spec":{"kubelet":{"maxPods":-1}}}`,
	`{"spec":{"kubelet":{"maxPods":"abc","shutdownGracePeriod":"30s","featureGates":{"Foo":true},"unknownField":[1,{"x":null}]}}}`,
	`{"spec":{"connectionTracking":{"tcpEstablishedTimeout":432000,"udpStreamTimeout":60,"udpTimeout":30},"enclaveOptions":{"enabled":false},"cpuOptions":{"nestedVirtualization":"enabled"},"ipPrefixCount":0}}`,
	`{"spec":{"placementGroupSelector":{"id":"pg-0123"},"networkInterfaces":[{"networkCardIndex":0,"deviceIndex":0,"interfaceType":"interface"},{"networkCardIndex":1,"deviceIndex":0,"interfaceType":"efa-only"}]}}`,
	`{"spec":{"networkInterfaces":[]}}`,
}

// TestUpstreamAcceptedManifests: every manifest of acceptedCases is stored,
// unpruned.
func TestUpstreamAcceptedManifests(t *testing.T) {
	for i, patch := range acceptedCases {
		t.Run(fmt.Sprintf("accepted-%d", i), func(t *testing.T) {
			u := parseManifest(t, baseV1)
			p := map[string]any{}
			if err := json.Unmarshal([]byte(patch), &p); err != nil {
				t.Fatalf("bad patch: %v", err)
			}
			u.Object = mergePatch(u.Object, p).(map[string]any)
			u.SetName(fmt.Sprintf("accepted-%d", i))
			if err := create(t, u); err != nil {
				t.Fatalf("%s rejected: %v", patch, err)
			}
			expectSubset(t, "", p, get(t, u).Object)
		})
	}
}

// TestWindows2025IsAccepted: Windows Server 2025 (upstream v1.9) is an
// amiFamily and an alias family, alone, combined or under Custom.
func TestWindows2025IsAccepted(t *testing.T) {
	for i, patch := range []string{
		`{"spec":{"amiSelectorTerms":[{"alias":"windows2025@latest"}]}}`,
		`{"spec":{"amiFamily":"Windows2025","amiSelectorTerms":[{"alias":"windows2025@latest"}]}}`,
		`{"spec":{"amiFamily":"Windows2025","amiSelectorTerms":[{"id":"ami-0123"}]}}`,
		`{"spec":{"amiFamily":"Custom","amiSelectorTerms":[{"alias":"windows2025@latest"}]}}`,
	} {
		u := parseManifest(t, baseV1)
		p := map[string]any{}
		if err := json.Unmarshal([]byte(patch), &p); err != nil {
			t.Fatalf("bad patch: %v", err)
		}
		u.Object = mergePatch(u.Object, p).(map[string]any)
		u.SetName(fmt.Sprintf("windows2025-%d", i))
		if err := create(t, u); err != nil {
			t.Errorf("%s rejected: %v", patch, err)
		}
	}
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// updateCase is a valid object changed by an update that transition rules
// must reject (or, when field is empty, accept).
type updateCase struct {
	name    string
	base    string
	patch   string
	field   string
	message string
}

// TestUpdateRules covers the rules that compare an object with its previous
// version (oldSelf), which only run on update.
func TestUpdateRules(t *testing.T) {
	cases := []updateCase{
		// v1 lets the role change, and role and instanceProfile swap, as
		// upstream: the controller makes an instance profile for the new role.
		{"v1 role may change", baseV1, `{"spec":{"role":"OtherRole"}}`, "", ""},
		{"v1 role to instanceProfile", baseV1, `{"spec":{"role":null,"instanceProfile":"profile"}}`, "", ""},
		{"v1 instanceProfile to role", strings.Replace(baseV1, "role: KarpenterNodeRole", "instanceProfile: profile", 1), `{"spec":{"instanceProfile":null,"role":"KarpenterNodeRole"}}`, "", ""},
		{"v1 role to both", baseV1, `{"spec":{"instanceProfile":"profile"}}`, "spec", "must specify exactly one of ['role', 'instanceProfile']"},
		{"v1beta1 role is immutable", baseV1beta1, `{"spec":{"role":"OtherRole"}}`, "spec.role", "role is immutable"},
		{"v1beta1 instanceProfile to role", strings.Replace(baseV1beta1, "role: KarpenterNodeRole", "instanceProfile: profile", 1), `{"spec":{"instanceProfile":null,"role":"KarpenterNodeRole"}}`, "spec", "changing from 'instanceProfile' to 'role'"},
		{"v1 instanceProfile may change", strings.Replace(baseV1, "role: KarpenterNodeRole", "instanceProfile: profile", 1), `{"spec":{"instanceProfile":"other-profile"}}`, "", ""},
		{"v1 tags and AMIs may change", baseV1, `{"spec":{"tags":{"team":"a"},"amiSelectorTerms":[{"alias":"al2023@v20240807"}]}}`, "", ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := parseManifest(t, c.base)
			u.SetName(fmt.Sprintf("update-%d", i))
			if err := create(t, u); err != nil {
				t.Fatal(err)
			}
			cur := get(t, u)
			patch := map[string]any{}
			if err := json.Unmarshal([]byte(c.patch), &patch); err != nil {
				t.Fatal(err)
			}
			cur.Object = mergePatch(cur.Object, patch).(map[string]any)
			err := e.Client.Update(context.Background(), cur)
			if c.field == "" {
				if err != nil {
					t.Fatalf("update rejected: %v", err)
				}
				expectSubset(t, "", patch, get(t, u).Object)
				return
			}
			expectRejected(t, err, c.field, c.message)
		})
	}
}
