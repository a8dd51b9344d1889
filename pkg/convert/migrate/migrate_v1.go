package migrate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	awsv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1beta1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/convert"
)

// v1beta1HopLimit is the IMDS hop limit v1beta1 defaulted to; v1 defaults to 1,
// which keeps pods (without host networking) from reaching IMDS.
const v1beta1HopLimit = 2

// toV1 migrates every v1beta1 object to v1, then moves the NodePools'
// kubelet settings onto their EC2NodeClasses.
func (c *converter) toV1() {
	for _, e := range c.entries {
		switch {
		case e.ncBeta != nil:
			warn := func(msg string) { c.note(e.src, e.kind, e.name, "%s", msg) }
			nc, err := nodeClassToV1(e.ncBeta, warn)
			if err != nil {
				c.fail(e.src, e.kind, e.name, err)
				continue
			}
			e.ncBeta, e.ncV1, e.converted = nil, nc, true
		case e.npBeta != nil:
			np, err := nodePoolToV1(e.npBeta)
			if err != nil {
				c.fail(e.src, e.kind, e.name, err)
				continue
			}
			e.kubelet = e.npBeta.Spec.Template.Spec.Kubelet
			e.npBeta, e.npV1, e.converted, e.fromBeta = nil, np, true, true
		}
	}
	if len(c.errs) == 0 {
		c.placeKubelets()
	}
}

// nodeClassToV1 is the webhook's EC2NodeClass conversion plus what a
// migration must add: it refuses what v1 cannot express (Ubuntu or Custom
// without AMI terms), drops the round-trip annotations and writes the old
// IMDS hop limit out.
func nodeClassToV1(in *awsv1beta1.EC2NodeClass, warn func(string)) (*awsv1.EC2NodeClass, error) {
	family := ptr.Deref(in.Spec.AMIFamily, "")
	hasTerms := len(in.Spec.AMISelectorTerms) > 0
	switch {
	case family == awsv1beta1.AMIFamilyUbuntu && !hasTerms:
		return nil, fmt.Errorf("spec.amiFamily Ubuntu is not supported by v1: add amiSelectorTerms that select your Ubuntu AMIs " +
			"(for example name and owner 099720109477), then convert again; the class becomes amiFamily AL2 with those terms")
	case (family == awsv1beta1.AMIFamilyCustom || family == "") && !hasTerms:
		return nil, fmt.Errorf("spec.amiFamily %q needs amiSelectorTerms: v1 requires at least one AMI selector term", family)
	}
	out, err := convert.EC2NodeClassV1beta1ToV1(in)
	if err != nil {
		return nil, err
	}
	out.Status = awsv1.EC2NodeClassStatus{}
	if _, ok := out.Annotations[awsv1.AnnotationUbuntuCompatibilityKey]; ok {
		// The annotation lets the webhook undo the change; a migrated
		// manifest is AL2 for good.
		delete(out.Annotations, awsv1.AnnotationUbuntuCompatibilityKey)
		if len(out.Annotations) == 0 {
			out.Annotations = nil
		}
		msg := "amiFamily Ubuntu became AL2 (same userData format) with your amiSelectorTerms"
		if in.Spec.BlockDeviceMappings == nil {
			msg += "; Ubuntu's root volume (/dev/sda1, 20Gi gp3, encrypted) is written out because AL2's default device differs"
		}
		warn(msg)
	}
	if family == "" {
		warn("spec.amiFamily was unset and is now Custom")
	}
	if a := out.Alias(); a != nil && a.Version == awsv1.AliasVersionLatest {
		warn(fmt.Sprintf("amiFamily %s without amiSelectorTerms became amiSelectorTerms [{alias: %s}]; pin a version (e.g. %s@v20240807) to control AMI rollouts", family, a, a.Family))
	}
	mo := out.Spec.MetadataOptions
	if mo == nil {
		mo = &awsv1.MetadataOptions{}
		out.Spec.MetadataOptions = mo
	}
	if mo.HTTPPutResponseHopLimit == nil {
		mo.HTTPPutResponseHopLimit = ptr.To[int64](v1beta1HopLimit)
		warn("metadataOptions.httpPutResponseHopLimit: 2 written out (the v1 default is 1, which cuts pods off IMDS); lower it once no pod needs IMDS")
	}
	return out, nil
}

// nodePoolToV1 is the webhook's NodePool conversion with v1beta1's defaults
// made explicit first (a manifest may rely on them, a stored object never
// does) and without the nodeClassRef round-trip annotation.
func nodePoolToV1(in *v1beta1.NodePool) (*v1.NodePool, error) {
	np := in.DeepCopy()
	d := &np.Spec.Disruption
	if d.ConsolidationPolicy == "" {
		d.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenUnderutilized
	}
	switch d.ConsolidationPolicy {
	case v1beta1.ConsolidationPolicyWhenEmpty:
		if d.ConsolidateAfter == nil || d.ConsolidateAfter.IsZero() {
			return nil, fmt.Errorf("spec.disruption.consolidateAfter must be set with consolidationPolicy WhenEmpty")
		}
	case v1beta1.ConsolidationPolicyWhenUnderutilized:
	default:
		return nil, fmt.Errorf("spec.disruption.consolidationPolicy %q is not WhenEmpty or WhenUnderutilized", d.ConsolidationPolicy)
	}
	if np.Spec.Template.Spec.NodeClassRef == nil || np.Spec.Template.Spec.NodeClassRef.Name == "" {
		return nil, fmt.Errorf("spec.template.spec.nodeClassRef.name is required")
	}
	out, err := convert.NodePoolV1beta1ToV1(np)
	if err != nil {
		return nil, err
	}
	out.Status = v1.NodePoolStatus{}
	delete(out.Annotations, v1.NodeClassReferenceAnnotationKey)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	if out.Spec.Template.Spec.Requirements == nil {
		out.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{}
	}
	return out, nil
}

// placeKubelets moves the kubelet of every migrated NodePool onto the
// EC2NodeClass it references. NodePools that share a class but disagree on
// kubelet cannot share it in v1: the class is split, one copy per distinct
// kubelet, and each NodePool is repointed to its copy.
func (c *converter) placeKubelets() {
	type user struct {
		e       *entry
		kubelet *awsv1.KubeletConfiguration
	}
	classUsers := map[*entry][]user{}
	var classOrder []*entry
	for _, e := range c.entries {
		if e.npV1 == nil {
			continue
		}
		ref := e.npV1.Spec.Template.Spec.NodeClassRef
		isEC2 := ref != nil && ref.Group == awsv1.Group && ref.Kind == "EC2NodeClass"
		if !e.fromBeta {
			if isEC2 {
				if class, err := c.findClass(e, ref.Name); err == nil && class != nil {
					// An already-v1 NodePool keeps whatever kubelet its class has.
					if classUsers[class] == nil {
						classOrder = append(classOrder, class)
					}
					classUsers[class] = append(classUsers[class], user{e: e, kubelet: class.ncV1.Spec.Kubelet})
				}
			}
			continue
		}
		kubelet, err := kubeletToV1(e.kubelet)
		if err != nil {
			c.fail(e.src, e.kind, e.name, err)
			continue
		}
		if !isEC2 {
			if kubelet != nil {
				c.note(e.src, e.kind, e.name, "spec.template.spec.kubelet kept in annotation %s: nodeClassRef is not an EC2NodeClass, move it to the node class", v1.KubeletCompatibilityAnnotationKey)
			}
			continue
		}
		class, err := c.findClass(e, ref.Name)
		if err != nil {
			c.fail(e.src, e.kind, e.name, err)
			continue
		}
		if class == nil {
			if kubelet != nil {
				c.note(e.src, e.kind, e.name, "spec.template.spec.kubelet kept in annotation %s: EC2NodeClass %q is not among the inputs; move the kubelet to its spec.kubelet and drop the annotation (convert both together to have it done)",
					v1.KubeletCompatibilityAnnotationKey, ref.Name)
			}
			continue
		}
		if classUsers[class] == nil {
			classOrder = append(classOrder, class)
		}
		classUsers[class] = append(classUsers[class], user{e: e, kubelet: kubelet})
	}
	if len(c.errs) > 0 {
		return
	}
	taken := map[string]bool{}
	for _, e := range c.entries {
		if e.ncV1 != nil {
			taken[e.ncV1.Name] = true
		}
	}
	for _, class := range classOrder {
		users := classUsers[class]
		// The class keeps the kubelet of its first user, or its own when an
		// already-v1 NodePool depends on it.
		base := users[0].kubelet
		for _, u := range users {
			if !u.e.fromBeta {
				base = class.ncV1.Spec.Kubelet
				break
			}
		}
		var variants []*awsv1.KubeletConfiguration
		copies := map[int]*entry{}
		for _, u := range users {
			i := variantIndex(variants, u.kubelet)
			if i < 0 {
				variants = append(variants, u.kubelet)
				i = len(variants) - 1
			}
			if !u.e.fromBeta {
				continue
			}
			dropKubeletAnnotation(u.e.npV1)
			if reflect.DeepEqual(u.kubelet, base) {
				if !reflect.DeepEqual(class.ncV1.Spec.Kubelet, base) {
					class.ncV1.Spec.Kubelet = base.DeepCopy()
					class.converted = true
				}
				if u.kubelet != nil {
					c.note(u.e.src, u.e.kind, u.e.name, "kubelet settings moved to EC2NodeClass %q (spec.kubelet)", class.ncV1.Name)
				}
				continue
			}
			cp, ok := copies[i]
			if !ok {
				name := splitName(class.ncV1.Name, u.e.npV1.Name, taken)
				nc := class.ncV1.DeepCopy()
				nc.Name = name
				nc.Spec.Kubelet = u.kubelet.DeepCopy()
				cp = &entry{src: class.src, kind: class.kind, name: class.name, ncV1: nc, converted: true, splitOf: class}
				copies[i] = cp
				c.insertAfter(class, cp)
				what := "the kubelet of NodePool " + strconv.Quote(u.e.npV1.Name)
				if u.kubelet == nil {
					what = "no kubelet, like NodePool " + strconv.Quote(u.e.npV1.Name)
				}
				c.note(class.src, class.kind, class.name, "split: NodePools that reference EC2NodeClass %q set different kubelets; new EC2NodeClass %q has %s",
					class.ncV1.Name, name, what)
			}
			u.e.npV1.Spec.Template.Spec.NodeClassRef.Name = cp.ncV1.Name
			drift := ""
			if u.e.kind == "NodePool" {
				drift = "; its nodes drift and are replaced once applied"
			}
			c.note(u.e.src, u.e.kind, u.e.name, "nodeClassRef now points to EC2NodeClass %q (split off %q for this kubelet)%s",
				cp.ncV1.Name, class.ncV1.Name, drift)
		}
	}
}

// findClass finds the EC2NodeClass a NodePool references. Same-named
// classes may come from different clusters' folders of one repository: one
// in the NodePool's file, then directory, wins; otherwise it is ambiguous.
func (c *converter) findClass(np *entry, name string) (*entry, error) {
	var all []*entry
	for _, e := range c.entries {
		if e.ncV1 != nil && e.ncV1.Name == name && !e.isSplitCopy() {
			all = append(all, e)
		}
	}
	if len(all) <= 1 {
		if len(all) == 0 {
			return nil, nil
		}
		return all[0], nil
	}
	// A Provisioner's providerRef names an AWSNodeTemplate (or its own
	// inline provider), a NodePool's an EC2NodeClass: in a tree midway
	// through a migration both generations share names, and the reference
	// means its own generation's object.
	if same := sameGeneration(np, all); len(same) > 0 {
		all = same
		if len(all) == 1 {
			return all[0], nil
		}
	}
	for _, scope := range []func(a, b Source) bool{
		func(a, b Source) bool { return a.File == b.File },
		sameDir,
	} {
		var hits []*entry
		for _, e := range all {
			if scope(e.src, np.src) {
				hits = append(hits, e)
			}
		}
		if len(hits) == 1 {
			return hits[0], nil
		}
		if len(hits) > 1 {
			break
		}
	}
	var where []string
	for _, e := range all {
		where = append(where, e.src.String())
	}
	return nil, fmt.Errorf("nodeClassRef %q is ambiguous: EC2NodeClasses of that name in %s; convert each cluster's manifests separately", name, strings.Join(where, "; "))
}

// sameGeneration keeps the classes that come from the same API generation
// as the NodePool's input (alpha: Provisioner / AWSNodeTemplate; v1beta1 and
// v1: NodePool / EC2NodeClass).
func sameGeneration(np *entry, classes []*entry) []*entry {
	alpha := func(kind string) bool { return kind == "Provisioner" || kind == "AWSNodeTemplate" }
	var out []*entry
	for _, c := range classes {
		if alpha(c.kind) == alpha(np.kind) {
			out = append(out, c)
		}
	}
	return out
}

// isSplitCopy is true for classes made by placeKubelets; they never match a
// reference by name because their names were chosen to be new.
func (e *entry) isSplitCopy() bool { return e.splitOf != nil }

func (c *converter) insertAfter(at, e *entry) {
	for i, x := range c.entries {
		if x == at {
			// Keep copies of one class in creation order after it.
			j := i + 1
			for j < len(c.entries) && c.entries[j].splitOf == at {
				j++
			}
			c.entries = append(c.entries[:j], append([]*entry{e}, c.entries[j:]...)...)
			return
		}
	}
	c.entries = append(c.entries, e)
}

// splitName names a split-off class after the class and the NodePool that
// needs it, made unique and short enough for a Kubernetes name.
func splitName(class, nodePool string, taken map[string]bool) string {
	base := class + "-" + nodePool
	if len(base) > validation.DNS1123SubdomainMaxLength-4 {
		base = strings.TrimRight(base[:validation.DNS1123SubdomainMaxLength-4], "-.")
	}
	name := base
	for n := 2; taken[name]; n++ {
		name = fmt.Sprintf("%s-%d", base, n)
	}
	taken[name] = true
	return name
}

func variantIndex(variants []*awsv1.KubeletConfiguration, k *awsv1.KubeletConfiguration) int {
	for i, v := range variants {
		if reflect.DeepEqual(v, k) {
			return i
		}
	}
	return -1
}

func dropKubeletAnnotation(np *v1.NodePool) {
	delete(np.Annotations, v1.KubeletCompatibilityAnnotationKey)
	if len(np.Annotations) == 0 {
		np.Annotations = nil
	}
}

// kubeletToV1 maps the NodePool kubelet of v1beta1 onto the EC2NodeClass
// kubelet of v1; the fields are the same, so the JSON is.
func kubeletToV1(k *v1beta1.KubeletConfiguration) (*awsv1.KubeletConfiguration, error) {
	if k == nil {
		return nil, nil
	}
	b, err := json.Marshal(k)
	if err != nil {
		return nil, err
	}
	out := &awsv1.KubeletConfiguration{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("spec.template.spec.kubelet: %w", err)
	}
	if reflect.DeepEqual(out, &awsv1.KubeletConfiguration{}) {
		return nil, nil
	}
	return out, nil
}
