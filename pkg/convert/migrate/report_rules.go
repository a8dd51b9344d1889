package migrate

import (
	"bufio"
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Rules added for what a migration used to miss silently: workloads that
// select the old node label, alpha APIs that v1 no longer serves, the move
// from instance profiles to roles, AL2023 user data that v1's NodeConfig
// overrides, and inputs the converter refuses or drops.
const (
	RuleProvisionerLabel   = "provisioner-name-label"
	RuleAlphaAPIRemoved    = "alpha-api-removed"
	RuleInstanceProfile    = "instance-profile-to-role"
	RuleAL2023UserData     = "al2023-userdata-kubelet"
	RuleNotConvertible     = "not-convertible"
	RuleUnknownField       = "unknown-field"
	RuleEmptyInput         = "empty-input"
	RuleDuplicateOutput    = "duplicate-output"
	RuleMixedMigration     = "mixed-migration"
	RuleOldHashAnnotation  = "old-hash-annotation"
	provisionerNameLabel   = "karpenter.sh/provisioner-name"
	nodePoolLabel          = "karpenter.sh/nodepool"
	instanceProfilePolicy  = "docs/aws/controller-policy.json"
	al2023NodeConfigKind   = "NodeConfig"
	al2023NodeConfigAPIPfx = "node.eks.aws/"
)

const (
	changeProvisionerLabel = "Nodes launched by v1 carry karpenter.sh/nodepool, not karpenter.sh/provisioner-name: pods that select the old label stay Pending once the old nodes are gone."
	actionProvisionerLabel = "Select karpenter.sh/nodepool instead (karpenter-convert names each NodePool after its Provisioner). During the move, select either label: two nodeSelectorTerms in node affinity, one per key."

	changeAlphaAPI = "karpenter.sh/v1alpha5 (Provisioner, Machine) and karpenter.k8s.aws/v1alpha1 (AWSNodeTemplate) are not served since v0.33: applying this manifest to a v1 install fails."
	actionAlphaAPI = "Apply the karpenter-convert output instead, and delete the old object only once its nodes have moved (docs/migration.md)."

	changeInstanceProfile = "v1 EC2NodeClasses name the node IAM role (spec.role) and Karpenter creates, tags and deletes the instance profile; karpenter-convert writes spec.role."
	actionInstanceProfile = "Before applying, grant the controller iam:CreateInstanceProfile, iam:TagInstanceProfile, iam:AddRoleToInstanceProfile, iam:RemoveRoleFromInstanceProfile, iam:DeleteInstanceProfile, iam:GetInstanceProfile and iam:PassRole on the node role (" + instanceProfilePolicy + "). Or keep the profile your tooling owns: convert with --keep-instance-profile."

	changeAL2023UserData = "On AL2023, v1 writes its own NodeConfig after yours, and its kubelet settings win: these values from userData are overridden."
	actionAL2023UserData = "Move them to the EC2NodeClass's spec.kubelet (same names), where Karpenter also accounts for them when it picks instance types; keep only other settings in userData."

	changeNotConvertible = "karpenter-convert refuses this object, so it has no v1 successor yet."
	changeUnknownField   = "This field is not part of the API: the converter refuses the object (a field it dropped would change behaviour without a word)."
	actionUnknownField   = "Fix or remove the field, then run the report again."
	changeEmptyInput     = "The file holds no document, so nothing in it was checked."
	actionEmptyInput     = "Check the path; remove the file if it is meant to be empty."
	changeDuplicate      = "Two inputs produce an object of the same kind and name: applying both, the last one silently replaces the first."
	actionDuplicate      = "Convert each cluster's manifests separately (one -f per cluster directory), or rename one of them."
	changeMixed          = "This tree holds old and new objects of the same name side by side (a migration midway): the old one converts to an object the new one already defines."
	actionMixed          = "Keep the new object, delete the old manifest once its nodes have moved, and convert only what has no successor yet (-f on those files)."
	changeOldHash        = "This hash annotation belongs to the old API: v1 stamps its own hashes, and a stale one only confuses drift tooling."
	actionOldHash        = "karpenter-convert drops it; remove it from manifests kept by hand."
)

// al2023KubeletKeys are the NodeConfig kubelet settings Karpenter's own
// NodeConfig writes in v1 (always, or when the EC2NodeClass's kubelet sets
// them), so a user's value for them no longer takes effect.
var al2023KubeletKeys = map[string]bool{
	"maxPods": true, "clusterDNS": true, "kubeReserved": true, "systemReserved": true,
	"evictionHard": true, "evictionSoft": true, "evictionSoftGracePeriod": true, "evictionMaxPodGracePeriod": true,
	"imageGCHighThresholdPercent": true, "imageGCLowThresholdPercent": true, "cpuCFSQuota": true, "podsPerCore": true,
}

// oldHashAnnotations are hash annotations of older APIs.
var oldHashAnnotations = []string{
	"karpenter.sh/provisioner-hash", "karpenter.k8s.aws/nodetemplate-hash",
}

// workloadSelectors flags selections of karpenter.sh/provisioner-name
// anywhere outside Karpenter's own objects and Nodes (which carry the label
// rather than select it): nodeSelector and matchLabels keys, match
// expressions (node affinity, label selectors of pod affinity and topology
// spread) and topology keys. Helm values files are plain maps and are walked
// the same way.
func (r *reporter) workloadSelectors(v interface{}, path []string) {
	switch r.doc.Kind() {
	case "Node", "Machine", "NodeClaim", "Provisioner", "NodePool":
		return
	}
	var visit func(v interface{}, path []string)
	visit = func(v interface{}, path []string) {
		switch t := v.(type) {
		case map[string]interface{}:
			parent := ""
			if len(path) > 0 {
				parent, _, _ = strings.Cut(path[len(path)-1], "[")
			}
			if parent == "nodeSelector" || parent == "matchLabels" {
				if _, ok := t[provisionerNameLabel]; ok {
					r.add(RuleProvisionerLabel, fieldPath(append(path[:len(path):len(path)], provisionerNameLabel)), changeProvisionerLabel, actionProvisionerLabel)
				}
			}
			if t["key"] == provisionerNameLabel {
				r.add(RuleProvisionerLabel, fieldPath(path)+".key", changeProvisionerLabel, actionProvisionerLabel)
			}
			if t["topologyKey"] == provisionerNameLabel {
				r.add(RuleProvisionerLabel, fieldPath(path)+".topologyKey", changeProvisionerLabel, actionProvisionerLabel)
			}
			for _, k := range sortedKeys(t) {
				visit(t[k], append(path[:len(path):len(path)], k))
			}
		case []interface{}:
			for i, item := range t {
				p := append([]string(nil), path...)
				if len(p) > 0 {
					p[len(p)-1] += "[" + strconv.Itoa(i) + "]"
				}
				visit(item, p)
			}
		}
	}
	visit(v, path)
}

// awsMigration reports the alpha API removal, the instance profile that
// becomes a role, and AL2023 user data whose kubelet settings v1 overrides.
func (r *reporter) awsMigration() {
	group, version := splitAPIVersion(r.doc.APIVersion())
	kind := r.doc.Kind()
	o := r.doc.Object
	alpha := (group == "karpenter.sh" && version == "v1alpha5" && (kind == "Provisioner" || kind == "Machine")) ||
		(group == "karpenter.k8s.aws" && version == "v1alpha1" && kind == "AWSNodeTemplate")
	if alpha {
		r.add(RuleAlphaAPIRemoved, "apiVersion", changeAlphaAPI, actionAlphaAPI)
	}
	var spec map[string]interface{}
	prefix := "spec."
	switch {
	case group == "karpenter.k8s.aws" && kind == "AWSNodeTemplate":
		spec, _ = o["spec"].(map[string]interface{})
	case group == "karpenter.sh" && version == "v1alpha5" && kind == "Provisioner":
		p, _ := lookup(o, "spec", "provider")
		spec, _ = p.(map[string]interface{})
		prefix = "spec.provider."
	case group == "karpenter.k8s.aws" && kind == "EC2NodeClass":
		spec, _ = o["spec"].(map[string]interface{})
	}
	if spec == nil {
		return
	}
	if alpha {
		field := prefix + "instanceProfile"
		if _, ok := spec["instanceProfile"]; !ok {
			field += " (unset: the defaultInstanceProfile setting)"
		}
		r.add(RuleInstanceProfile, field, changeInstanceProfile, actionInstanceProfile)
	}
	if !isAL2023(spec) {
		return
	}
	ud, _ := spec["userData"].(string)
	if keys := al2023OverriddenKubelet(ud); len(keys) > 0 {
		r.add(RuleAL2023UserData, prefix+"userData (NodeConfig spec.kubelet.config: "+strings.Join(keys, ", ")+")", changeAL2023UserData, actionAL2023UserData)
	}
}

// oldHashes flags hash annotations of the old APIs on any object.
func (r *reporter) oldHashes() {
	md, _ := r.doc.Object["metadata"].(map[string]interface{})
	ann, _ := md["annotations"].(map[string]interface{})
	for _, a := range oldHashAnnotations {
		if _, ok := ann[a]; ok {
			r.add(RuleOldHashAnnotation, fieldPath([]string{"metadata", "annotations", a}), changeOldHash, actionOldHash)
		}
	}
}

func isAL2023(spec map[string]interface{}) bool {
	if f, _ := spec["amiFamily"].(string); f == "AL2023" {
		return true
	}
	terms, _ := spec["amiSelectorTerms"].([]interface{})
	for _, t := range terms {
		m, _ := t.(map[string]interface{})
		if a, _ := m["alias"].(string); strings.HasPrefix(strings.ToLower(a), "al2023@") {
			return true
		}
	}
	return false
}

// al2023OverriddenKubelet returns, sorted, the kubelet settings of the
// NodeConfig documents in AL2023 user data (plain YAML or MIME multipart)
// that Karpenter's NodeConfig overrides in v1.
func al2023OverriddenKubelet(userData string) []string {
	found := map[string]bool{}
	for _, part := range userDataParts(userData) {
		for _, doc := range strings.Split(part, "\n---") {
			var nc struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Spec       struct {
					Kubelet struct {
						Config map[string]interface{} `json:"config"`
					} `json:"kubelet"`
				} `json:"spec"`
			}
			if yaml.Unmarshal([]byte(doc), &nc) != nil || nc.Kind != al2023NodeConfigKind || !strings.HasPrefix(nc.APIVersion, al2023NodeConfigAPIPfx) {
				continue
			}
			for k := range nc.Spec.Kubelet.Config {
				if al2023KubeletKeys[k] {
					found[k] = true
				}
			}
		}
	}
	keys := make([]string, 0, len(found))
	for k := range found {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// userDataParts splits MIME multipart user data into its parts' bodies;
// anything else is one part.
func userDataParts(ud string) []string {
	if !strings.HasPrefix(strings.TrimSpace(ud), "MIME-Version") {
		return []string{ud}
	}
	msg, err := mail.ReadMessage(bufio.NewReader(strings.NewReader(strings.TrimSpace(ud) + "\n")))
	if err != nil {
		return []string{ud}
	}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		return []string{ud}
	}
	var out []string
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		var b bytes.Buffer
		if _, err := io.Copy(&b, p); err == nil {
			out = append(out, b.String())
		}
	}
	if len(out) == 0 {
		return []string{ud}
	}
	return out
}
