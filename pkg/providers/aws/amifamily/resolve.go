package amifamily

import (
	"context"
	"fmt"
	"maps"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily/bootstrap"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/kubeletcel"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// LaunchOptions: what a launch template needs from outside the EC2NodeClass.
type LaunchOptions struct {
	ClusterName      string
	ClusterEndpoint  string            // https://...
	ClusterCABundle  string            // base64 PEM, may be ""
	ClusterCIDR      string            // service CIDR, e.g. "10.100.0.0/16" (AL2023's NodeConfig needs it)
	KubeDNSIP        string            // e.g. "10.100.0.10" ("" = family default)
	InstanceProfile  string            // name (nc.Status.InstanceProfile)
	SecurityGroupIDs []string          // nc.Status.SecurityGroups ids
	Tags             map[string]string // for the LT and its instance/volume/network-interface tag specs
	Labels           map[string]string // node labels the kubelet registers with
	Taints           []corev1.Taint    // NodeClaim spec taints + startupTaints + karpenter.sh/unregistered:NoExecute
	NodeClassName    string
	// Tenancy is the instances' tenancy: awsv1.InstanceTenancyDefault or
	// awsv1.InstanceTenancyDedicated ("" is default). It goes into the
	// template's Placement, so shared and dedicated launches never share a
	// template.
	Tenancy string `json:",omitempty"`
	// PlacementGroupID is the placement group the instances launch into
	// (the template's Placement.GroupId, "" for none), and
	// PlacementGroupPartition the partition of a partition group (0: EC2
	// chooses).
	PlacementGroupID        string `json:",omitempty"`
	PlacementGroupPartition int32  `json:",omitempty"`
}

// LaunchTemplate: one resolved option set = one EC2 launch template.
type LaunchTemplate struct {
	LaunchOptions
	ImageID                  string
	UserData                 string                      // plain text; the launchtemplate package base64-encodes
	BlockDeviceMappings      []*awsv1.BlockDeviceMapping // family defaults when the class has none
	MetadataOptions          *awsv1.MetadataOptions      // class value or v1 default
	DetailedMonitoring       bool
	AssociatePublicIPAddress *bool
	InstanceStorePolicy      *awsv1.InstanceStorePolicy
	EFACount                 int
	CapacityType             string                     // karpenter.sh/capacity-type value
	InstanceTypes            []*scheduling.InstanceType // the subset launchable with this template
	// CapacityReservationID is set when CapacityType is reserved: the
	// template launches into this reservation (one template per reservation,
	// as upstream), of CapacityReservationType (default or capacity-block).
	CapacityReservationID   string
	CapacityReservationType awsv1.CapacityReservationType
	// EnclaveOptions, ConnectionTracking and CPUOptions are the class's,
	// passed to the template as they are.
	// (Left out of the template's name hash when unset, so that templates
	// of classes without them keep their names.)
	EnclaveOptions     *awsv1.EnclaveOptions     `json:",omitempty"`
	ConnectionTracking *awsv1.ConnectionTracking `json:",omitempty"`
	CPUOptions         *awsv1.CPUOptions         `json:",omitempty"`
	// IPPrefixCount is the class's ipPrefixCount: IPv4 prefixes for the
	// template's interfaces, or IPv6 prefixes when IPv6Prefixes (the
	// cluster's kube DNS address is IPv6).
	IPPrefixCount *int32 `json:",omitempty"`
	IPv6Prefixes  bool   `json:",omitempty"`
	// IPv6 is set when the cluster is IPv6 (its kube DNS address is IPv6):
	// every interface the template creates that carries IP traffic gets a
	// primary IPv6 address.
	IPv6 bool `json:",omitempty"`
	// NetworkInterfaces are the class's spec.networkInterfaces: when set,
	// the template carries exactly these interfaces in place of the
	// default primary one (or the EFA interfaces an EFA request adds).
	NetworkInterfaces []*awsv1.NetworkInterface `json:",omitempty"`
}

// Resolver turns an EC2NodeClass, a NodeClaim and candidate instance types
// into launch template option sets. It is pure: everything it needs comes in
// through its arguments and options.
type Resolver struct {
	// nodeClassCEL: the kubelet's CEL expressions are evaluated per
	// instance type (WithNodeClassCEL).
	nodeClassCEL bool
	eniLimits    ENILookup
}

// ENILookup tells the network interfaces of an instance type's default
// network card and the IPv4 addresses of each (the instance type
// provider's ENILimits); false when unknown.
type ENILookup func(instanceType string) (defaultENIs, ipsPerENI int64, ok bool)

// ResolverOption configures a Resolver.
type ResolverOption func(*Resolver)

// WithNodeClassCEL sets the NodeClassCEL gate. On, the CEL expressions of
// an EC2NodeClass's kubelet are evaluated for each instance type and the
// results written into its user data (maxPods, kubeReserved,
// systemReserved), instance types with different results getting
// different launch templates; default_enis and ips_per_eni come from
// eniLimits. Off, they are not honoured: the family's defaults apply.
func WithNodeClassCEL(enabled bool, eniLimits ENILookup) ResolverOption {
	return func(r *Resolver) { r.nodeClassCEL, r.eniLimits = enabled, eniLimits }
}

// NewResolver returns a Resolver.
func NewResolver(opts ...ResolverOption) *Resolver {
	r := &Resolver{}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Resolve groups instanceTypes by AMI (the newest image of nc.Status.AMIs
// whose requirements the type meets), then by max pods when the family
// writes max-pods into user data (each group's kubelet gets its own
// --max-pods), then by the kubeReserved and systemReserved the class's
// kubelet expressions give them (NodeClassCEL), then by EFA count when the
// NodeClaim requests EFA devices:
// one LaunchTemplate per group (and, for capacity type reserved, per
// capacity reservation of the group's available offerings the NodeClaim
// allows), in a stable order (AMIs in status order,
// groups in the order their first instance type appears). Instance types no
// AMI fits are left out; when none fits, the error names the class, its AMIs
// with their requirements, and why the first instance type does not fit.
func (r *Resolver) Resolve(nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim, instanceTypes []*scheduling.InstanceType, capacityType string, opts LaunchOptions) ([]*LaunchTemplate, error) {
	if nc == nil || nodeClaim == nil {
		return nil, fmt.Errorf("resolving launch templates: EC2NodeClass and NodeClaim are required")
	}
	family := ForNodeClass(nc)
	if len(nc.Status.AMIs) == 0 {
		return nil, fmt.Errorf("EC2NodeClass %q has no AMIs in status.amis: its amiSelectorTerms matched no image or were not resolved yet", nc.Name)
	}
	if len(instanceTypes) == 0 {
		return nil, fmt.Errorf("EC2NodeClass %q: no instance types to launch", nc.Name)
	}
	if family.Name != awsv1.AMIFamilyCustom && (opts.ClusterName == "" || opts.ClusterEndpoint == "") {
		return nil, fmt.Errorf("EC2NodeClass %q: %s user data needs the cluster name and API server endpoint (CLUSTER_NAME %q, CLUSTER_ENDPOINT %q)", nc.Name, family.Name, opts.ClusterName, opts.ClusterEndpoint)
	}
	groups, err := mapToAMIs(nc, instanceTypes)
	if err != nil {
		return nil, err
	}

	opts = completeOptions(nc, nodeClaim, capacityType, opts, family)
	_, wantsEFA := nodeClaim.Spec.Resources.Requests[awsv1.ResourceEFA]
	writesMaxPods := family.Name != awsv1.AMIFamilyCustom
	var kubeReserved, systemReserved map[string]string
	if nc.Spec.Kubelet != nil {
		kubeReserved, systemReserved = nc.Spec.Kubelet.KubeReserved, nc.Spec.Kubelet.SystemReserved
	}
	if !r.nodeClassCEL {
		kubeReserved, systemReserved = kubeletcel.StaticOnly(kubeReserved), kubeletcel.StaticOnly(systemReserved)
	}
	_, maxPodsExpression := nc.Spec.Kubelet.MaxPodsExpression()

	var out []*LaunchTemplate
	claimReqs := claimRequirements(nodeClaim)
	for _, g := range groups {
		var order []launchKey
		byKey := map[launchKey][]*scheduling.InstanceType{}
		reserved := map[launchKey][2]map[string]string{}
		for _, it := range g.instanceTypes {
			var k launchKey
			if writesMaxPods {
				k.maxPods = podsOf(it)
			}
			// kubeReserved and systemReserved expressions evaluate per
			// type; types whose results differ need their own user data.
			kr, sr, err := r.reservedFor(it, kubeReserved, systemReserved)
			if err != nil {
				return nil, fmt.Errorf("EC2NodeClass %q: %w", nc.Name, err)
			}
			k.kubeReserved, k.systemReserved = serializeReserved(kr), serializeReserved(sr)
			reserved[k] = [2]map[string]string{kr, sr}
			if wantsEFA {
				q := it.Capacity[awsv1.ResourceEFA]
				k.efa = q.Value()
			}
			if capacityType == v1.CapacityTypeReserved {
				k.reservations = reservationsOf(it, claimReqs)
			}
			if _, ok := byKey[k]; !ok {
				order = append(order, k)
			}
			byKey[k] = append(byKey[k], it)
		}
		for _, k := range order {
			lt, err := r.launchTemplate(nc, family, g.amiID, k.maxPods, int(k.efa), writesMaxPods, maxPodsExpression, reserved[k], capacityType, opts, byKey[k])
			if err != nil {
				return nil, err
			}
			if k.reservations == "" {
				out = append(out, lt)
				continue
			}
			// One template per reservation: a launch template targets one.
			for _, res := range strings.Split(k.reservations, ",") {
				id, typ, _ := strings.Cut(res, "=")
				cp := *lt
				cp.CapacityReservationID = id
				cp.CapacityReservationType = awsv1.CapacityReservationType(typ)
				out = append(out, &cp)
			}
		}
	}
	return out, nil
}

// launchKey is what splits instance types into launch templates.
type launchKey struct {
	maxPods, efa int64
	// reservations are "id=type" joined by commas (a string keeps the key
	// comparable).
	reservations string
	// kubeReserved and systemReserved are the reservations the kubelet is
	// given, as "key=value" joined by commas.
	kubeReserved, systemReserved string
}

// reservedFor are the kubeReserved and systemReserved maps the kubelet of
// the instance type is given: with NodeClassCEL, expressions replaced by
// their results for it (kubeletcel.ResolveReserved, the evaluation
// scheduling made), max_pods being its pods capacity.
func (r *Resolver) reservedFor(it *scheduling.InstanceType, kubeReserved, systemReserved map[string]string) (map[string]string, map[string]string, error) {
	if !r.nodeClassCEL {
		return kubeReserved, systemReserved, nil
	}
	vars := func() (kubeletcel.Vars, error) { return r.celVars(it) }
	env := kubeletcel.Shared()
	ctx := context.TODO()
	kr, err := env.ResolveReserved(ctx, "kubeReserved", kubeReserved, vars)
	if err != nil {
		return nil, nil, fmt.Errorf("spec.kubelet.kubeReserved: %w", err)
	}
	sr, err := env.ResolveReserved(ctx, "systemReserved", systemReserved, vars)
	if err != nil {
		return nil, nil, fmt.Errorf("spec.kubelet.systemReserved: %w", err)
	}
	// Maps without expressions come back as they are: the class's own.
	return maps.Clone(kr), maps.Clone(sr), nil
}

// celVars are the values kubelet expressions see for an instance type: its
// vCPUs and memory labels, the ENI limits of the lookup, its pods capacity.
func (r *Resolver) celVars(it *scheduling.InstanceType) (kubeletcel.Vars, error) {
	label := func(key string) (int64, error) {
		req, ok := it.Requirements.Get(key)
		if !ok {
			return 0, fmt.Errorf("instance type %s has no %s label to evaluate kubelet expressions with", it.Name, key)
		}
		v, ok := req.Single()
		if !ok {
			return 0, fmt.Errorf("instance type %s has no single %s value to evaluate kubelet expressions with", it.Name, key)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("instance type %s: label %s=%q: %w", it.Name, key, v, err)
		}
		return n, nil
	}
	vcpus, err := label(awsv1.LabelInstanceCPU)
	if err != nil {
		return kubeletcel.Vars{}, err
	}
	memory, err := label(awsv1.LabelInstanceMemory)
	if err != nil {
		return kubeletcel.Vars{}, err
	}
	out := kubeletcel.Vars{VCPUs: vcpus, MemoryMiB: memory, MaxPods: podsOf(it), InstanceType: it.Name}
	if r.eniLimits != nil {
		if enis, ips, ok := r.eniLimits(it.Name); ok {
			out.DefaultENIs, out.IPsPerENI = enis, ips
		}
	}
	return out, nil
}

// serializeReserved writes a reserved map as sorted "key=value" pairs.
func serializeReserved(m map[string]string) string {
	if m == nil {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(k + "=" + m[k])
	}
	b.WriteString("}")
	return b.String()
}

func claimRequirements(nodeClaim *v1.NodeClaim) scheduling.Requirements {
	reqs := make([]corev1.NodeSelectorRequirement, 0, len(nodeClaim.Spec.Requirements))
	for _, r := range nodeClaim.Spec.Requirements {
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
	}
	return scheduling.FromNodeSelectorRequirements(reqs...)
}

// reservationsOf lists the reservations of the type's available reserved
// offerings that the NodeClaim allows, as sorted "id=type" pairs.
func reservationsOf(it *scheduling.InstanceType, claimReqs scheduling.Requirements) string {
	var out []string
	for _, o := range it.Offerings {
		if o.CapacityType != v1.CapacityTypeReserved || !o.Launchable() || claimReqs.Intersects(o.Requirements) != nil {
			continue
		}
		id, ok := o.Requirements.Get(awsv1.LabelCapacityReservationID)
		if !ok {
			continue
		}
		idValue, ok := id.Single()
		if !ok {
			continue
		}
		typ := string(awsv1.CapacityReservationTypeDefault)
		if t, ok := o.Requirements.Get(awsv1.LabelCapacityReservationType); ok {
			if v, ok := t.Single(); ok {
				typ = v
			}
		}
		out = append(out, idValue+"="+typ)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func (r *Resolver) launchTemplate(nc *awsv1.EC2NodeClass, family *Family, amiID string, maxPods int64, efa int, writesMaxPods, maxPodsExpression bool, reserved [2]map[string]string, capacityType string, opts LaunchOptions, its []*scheduling.InstanceType) (*LaunchTemplate, error) {
	kubelet := &awsv1.KubeletConfiguration{}
	if nc.Spec.Kubelet != nil {
		kubelet = nc.Spec.Kubelet.DeepCopy()
	}
	// A maxPods expression never reaches the node: the count it gave the
	// instance types (or, with NodeClassCEL off, their default) does.
	if maxPodsExpression {
		delete(kubelet.Extra, "maxPods")
	}
	// The instance type's pods capacity already is min(maxPods, podsPerCore
	// x vCPUs) or the ENI limit; passing it keeps the kubelet and Karpenter's
	// scheduling in agreement.
	if kubelet.MaxPods == nil && writesMaxPods && (maxPods > 0 || maxPodsExpression) {
		kubelet.MaxPods = ptr.To(int32(maxPods))
	}
	// Reservations as resolved for these instance types: expressions
	// replaced by their results, or left out.
	kubelet.KubeReserved, kubelet.SystemReserved = reserved[0], reserved[1]
	if len(kubelet.ClusterDNS) == 0 && opts.KubeDNSIP != "" {
		kubelet.ClusterDNS = []string{opts.KubeDNSIP}
	}
	userData, err := bootstrap.Generate(family.Name, bootstrap.Options{
		ClusterName:         opts.ClusterName,
		ClusterEndpoint:     opts.ClusterEndpoint,
		CABundle:            opts.ClusterCABundle,
		ClusterCIDR:         opts.ClusterCIDR,
		Kubelet:             kubelet,
		Labels:              opts.Labels,
		Taints:              opts.Taints,
		CustomUserData:      ptr.Deref(nc.Spec.UserData, ""),
		InstanceStorePolicy: nc.Spec.InstanceStorePolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("EC2NodeClass %q: generating %s user data: %w", nc.Name, family.Name, err)
	}
	if len(userData) > MaxUserDataBytes {
		return nil, fmt.Errorf("EC2NodeClass %q: %s user data is %d bytes, more than EC2's limit of %d; shorten spec.userData", nc.Name, family.Name, len(userData), MaxUserDataBytes)
	}
	lt := &LaunchTemplate{
		LaunchOptions:            opts,
		ImageID:                  amiID,
		UserData:                 userData,
		BlockDeviceMappings:      BlockDeviceMappings(nc, family),
		MetadataOptions:          MetadataOptions(nc.Spec.MetadataOptions, opts.KubeDNSIP),
		DetailedMonitoring:       ptr.Deref(nc.Spec.DetailedMonitoring, false),
		AssociatePublicIPAddress: nc.Spec.AssociatePublicIPAddress,
		InstanceStorePolicy:      nc.Spec.InstanceStorePolicy,
		EFACount:                 efa,
		CapacityType:             capacityType,
		InstanceTypes:            its,
		EnclaveOptions:           nc.Spec.EnclaveOptions.DeepCopy(),
		ConnectionTracking:       nc.Spec.ConnectionTracking.DeepCopy(),
		CPUOptions:               nc.Spec.CPUOptions.DeepCopy(),
	}
	for _, ni := range nc.Spec.NetworkInterfaces {
		if ni != nil {
			lt.NetworkInterfaces = append(lt.NetworkInterfaces, ni.DeepCopy())
		}
	}
	if ip := net.ParseIP(opts.KubeDNSIP); ip != nil && ip.To4() == nil {
		lt.IPv6 = true
	}
	if nc.Spec.IPPrefixCount != nil {
		lt.IPPrefixCount = ptr.To(*nc.Spec.IPPrefixCount)
		ip := net.ParseIP(opts.KubeDNSIP)
		lt.IPv6Prefixes = ip != nil && ip.To4() == nil
	}
	return lt, nil
}

// MaxUserDataBytes is EC2's limit on user data, counted before base64.
const MaxUserDataBytes = 16 * 1024

func podsOf(it *scheduling.InstanceType) int64 {
	q, ok := it.Capacity[corev1.ResourcePods]
	if !ok {
		return 0
	}
	return q.Value()
}

// completeOptions fills what the caller left empty from the class's status,
// and computes the labels and taints the kubelet registers with.
func completeOptions(nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim, capacityType string, opts LaunchOptions, family *Family) LaunchOptions {
	if opts.InstanceProfile == "" {
		opts.InstanceProfile = nc.Status.InstanceProfile
	}
	if len(opts.SecurityGroupIDs) == 0 {
		for _, sg := range nc.Status.SecurityGroups {
			opts.SecurityGroupIDs = append(opts.SecurityGroupIDs, sg.ID)
		}
	}
	if opts.NodeClassName == "" {
		opts.NodeClassName = nc.Name
	}
	opts.Labels = NodeLabels(opts.Labels, nodeClaim.Labels, capacityType)
	opts.Taints = NodeTaints(opts.Taints, nodeClaim)
	return opts
}

// NodeLabels are the labels a node registers with: the given ones, the
// NodeClaim's and the capacity type, minus those the NodeRestriction
// admission plugin forbids a kubelet to set on itself (the kubernetes.io and
// k8s.io domains and their sub-domains, node-restriction.kubernetes.io
// included); Karpenter adds those to the Node after it registers.
func NodeLabels(given, nodeClaimLabels map[string]string, capacityType string) map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{given, nodeClaimLabels} {
		for k, v := range m {
			if !kubeletForbiddenLabel(k) {
				out[k] = v
			}
		}
	}
	if capacityType != "" {
		out[v1.CapacityTypeLabelKey] = capacityType
	}
	return out
}

func kubeletForbiddenLabel(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range []string{"kubernetes.io", "k8s.io"} {
		if domain == d || strings.HasSuffix(domain, "."+d) {
			return true
		}
	}
	return false
}

// NodeTaints are the taints a node registers with: the given ones, the
// NodeClaim's taints and startup taints (duplicates dropped), and
// karpenter.sh/unregistered:NoExecute unless already present, which keeps
// pods off the node until Karpenter has synced its labels and taints.
func NodeTaints(given []corev1.Taint, nodeClaim *v1.NodeClaim) []corev1.Taint {
	var out []corev1.Taint
	seen := map[string]bool{}
	add := func(ts []corev1.Taint) {
		for _, t := range ts {
			id := t.Key + "=" + t.Value + ":" + string(t.Effect)
			if seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
		}
	}
	add(given)
	add(nodeClaim.Spec.Taints)
	add(nodeClaim.Spec.StartupTaints)
	for _, t := range out {
		if t.MatchTaint(&v1.UnregisteredNoExecuteTaint) {
			return out
		}
	}
	return append(out, v1.UnregisteredNoExecuteTaint)
}

type amiGroup struct {
	amiID         string
	instanceTypes []*scheduling.InstanceType
}

// mapToAMIs gives each instance type the first AMI of status.amis (newest
// first) whose requirements it meets, preferring non-deprecated images. The
// result follows the status order of the AMIs.
func mapToAMIs(nc *awsv1.EC2NodeClass, instanceTypes []*scheduling.InstanceType) ([]amiGroup, error) {
	amis := make([]awsv1.AMI, 0, len(nc.Status.AMIs))
	for _, deprecated := range []bool{false, true} {
		for _, a := range nc.Status.AMIs {
			if a.Deprecated == deprecated {
				amis = append(amis, a)
			}
		}
	}
	reqs := make([]scheduling.Requirements, len(amis))
	for i, a := range amis {
		reqs[i] = scheduling.FromNodeSelectorRequirements(a.Requirements...)
	}
	index := map[string]int{}
	var groups []amiGroup
	var firstErr error
	for _, it := range instanceTypes {
		for i, a := range amis {
			err := it.Requirements.Compatible(reqs[i], nil)
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("instance type %s, AMI %s: %w", it.Name, a.ID, err)
				}
				continue
			}
			g, ok := index[a.ID]
			if !ok {
				g = len(groups)
				index[a.ID] = g
				groups = append(groups, amiGroup{amiID: a.ID})
			}
			groups[g].instanceTypes = append(groups[g].instanceTypes, it)
			break
		}
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("EC2NodeClass %q: none of the %d instance types (%s) meets the requirements of any AMI in status.amis [%s] (%v)",
			nc.Name, len(instanceTypes), instanceTypeNames(instanceTypes, 5), describeAMIs(amis), firstErr)
	}
	// Launch templates follow the status order of their AMIs.
	pos := map[string]int{}
	for i, a := range nc.Status.AMIs {
		if _, ok := pos[a.ID]; !ok {
			pos[a.ID] = i
		}
	}
	sort.SliceStable(groups, func(i, j int) bool { return pos[groups[i].amiID] < pos[groups[j].amiID] })
	return groups, nil
}

func instanceTypeNames(its []*scheduling.InstanceType, max int) string {
	names := make([]string, 0, max)
	for i, it := range its {
		if i == max {
			names = append(names, fmt.Sprintf("and %d more", len(its)-max))
			break
		}
		names = append(names, it.Name)
	}
	return strings.Join(names, ", ")
}

func describeAMIs(amis []awsv1.AMI) string {
	parts := make([]string, 0, len(amis))
	for _, a := range amis {
		parts = append(parts, a.ID+" requires "+scheduling.FromNodeSelectorRequirements(a.Requirements...).String())
	}
	return strings.Join(parts, "; ")
}

// BlockDeviceMappings are the class's mappings, or the family's defaults
// when it has none (AL2/AL2023/Custom /dev/xvda 20Gi, Bottlerocket /dev/xvda
// 4Gi + /dev/xvdb 20Gi, Windows /dev/sda1 50Gi; gp3, encrypted). Copies, so
// callers may change them.
func BlockDeviceMappings(nc *awsv1.EC2NodeClass, family *Family) []*awsv1.BlockDeviceMapping {
	var out []*awsv1.BlockDeviceMapping
	if len(nc.Spec.BlockDeviceMappings) > 0 {
		for _, m := range nc.Spec.BlockDeviceMappings {
			if m != nil {
				out = append(out, m.DeepCopy())
			}
		}
		return out
	}
	for i := range family.DefaultBlockDeviceMappings {
		out = append(out, family.DefaultBlockDeviceMappings[i].DeepCopy())
	}
	return out
}

// Defaults of the instance metadata service, as the v1 API defaults them:
// IMDSv2 tokens required and one hop, so pods cannot reach the node's
// credentials.
const (
	DefaultHTTPEndpoint            = "enabled"
	DefaultHTTPProtocolIPv6        = "disabled"
	DefaultHTTPPutResponseHopLimit = int64(1)
	DefaultHTTPTokens              = "required"
)

// MetadataOptions is the class's metadataOptions with unset fields set to
// the v1 defaults; in an IPv6 cluster (kube DNS on an IPv6 address) the
// IPv6 endpoint is enabled by default, as upstream does.
func MetadataOptions(mo *awsv1.MetadataOptions, kubeDNSIP string) *awsv1.MetadataOptions {
	out := &awsv1.MetadataOptions{}
	if mo != nil {
		out = mo.DeepCopy()
	}
	if out.HTTPEndpoint == nil {
		out.HTTPEndpoint = ptr.To(DefaultHTTPEndpoint)
	}
	if out.HTTPProtocolIPv6 == nil {
		v := DefaultHTTPProtocolIPv6
		if ip := net.ParseIP(kubeDNSIP); ip != nil && ip.To4() == nil {
			v = "enabled"
		}
		out.HTTPProtocolIPv6 = ptr.To(v)
	}
	if out.HTTPPutResponseHopLimit == nil {
		out.HTTPPutResponseHopLimit = ptr.To(DefaultHTTPPutResponseHopLimit)
	}
	if out.HTTPTokens == nil {
		out.HTTPTokens = ptr.To(DefaultHTTPTokens)
	}
	return out
}
