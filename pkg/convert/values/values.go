package values

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Note says what happened to one key.
type Note struct {
	// Key is the old key's dotted path (controller.env[LEADER_ELECT] for an env var).
	Key string `json:"key"`
	// To is the new key's path; empty when the key was dropped.
	To string `json:"to,omitempty"`
	// Message says why and what to do.
	Message string `json:"message"`
}

func (n Note) String() string {
	if n.To != "" {
		return fmt.Sprintf("%s -> %s: %s", n.Key, n.To, n.Message)
	}
	return fmt.Sprintf("%s: %s", n.Key, n.Message)
}

// TopLevelKeys are the v1 chart's top-level values (charts/karpenter/values.yaml;
// a test keeps the two equal).
var TopLevelKeys = []string{
	"additionalAnnotations", "additionalClusterRoleRules", "additionalLabels", "affinity", "cloudProvider", "controller",
	"dnsConfig", "dnsPolicy", "extraVolumes", "fullnameOverride", "hostNetwork", "imagePullPolicy", "imagePullSecrets",
	"initContainers", "logErrorOutputPaths", "logLevel", "logOutputPaths", "nameOverride", "nodeSelector", "podAnnotations",
	"podDisruptionBudget", "podLabels", "podSecurityContext", "priorityClassName", "replicas", "revisionHistoryLimit",
	"schedulerName", "service", "serviceAccount", "serviceMonitor", "settings", "strategy",
	"terminationGracePeriodSeconds", "tolerations", "topologySpreadConstraints", "webhook",
}

// SettingsKeys are the v1 chart's settings.* keys.
var SettingsKeys = []string{
	"amiRefreshInterval", "awsFeatureGates", "batchIdleDuration", "batchMaxDuration", "clusterCABundle", "clusterEndpoint",
	"clusterName", "disableClusterStateObservability", "disableDryRun", "eksControlPlane", "enableDRA", "enableZonalShift",
	"featureGates", "ignoreDRARequests", "interruptionQueue", "isolatedVPC", "legacyNodeRepair", "minValuesPolicy",
	"preferencePolicy", "reservedENIs", "schedulerConfig", "securityGroupRefreshInterval", "subnetRefreshInterval",
	"vmMemoryOverheadPercent",
}

// FeatureGates are the v1 chart's settings.featureGates.* keys.
var FeatureGates = []string{
	"capacityBuffer", "nodeOverlay", "nodeRepair", "podDeletionCostManagement", "reservedCapacity",
	"spotToSpotConsolidation", "staticCapacity", "terminateFirstDrift", "terminateFirstRepair",
}

// AWSFeatureGates are the v1 chart's settings.awsFeatureGates.* keys.
var AWSFeatureGates = []string{"draEFA", "draNVIDIAGPU", "nodeClassCEL", "rebootForRepair"}

// move is a key that changed place: old path -> new path (empty: dropped).
type move struct {
	from, to, why string
}

// moves are the v0.3x keys, in the order notes are written.
var moves = []move{
	{"settings.aws.clusterName", "settings.clusterName", "settings.aws.* moved to settings.* (v0.32)."},
	{"settings.aws.clusterEndpoint", "settings.clusterEndpoint", "settings.aws.* moved to settings.* (v0.32)."},
	{"settings.aws.interruptionQueueName", "settings.interruptionQueue", "renamed; the value is the SQS queue name."},
	{"settings.interruptionQueueName", "settings.interruptionQueue", "renamed in v0.37; the value is the SQS queue name."},
	{"settings.aws.isolatedVPC", "settings.isolatedVPC", "settings.aws.* moved to settings.* (v0.32)."},
	{"settings.aws.vmMemoryOverheadPercent", "settings.vmMemoryOverheadPercent", "settings.aws.* moved to settings.* (v0.32)."},
	{"settings.aws.reservedENIs", "settings.reservedENIs", "settings.aws.* moved to settings.* (v0.32); a string in v1."},
	{"settings.aws.defaultInstanceProfile", "", "removed in v1: Karpenter creates the instance profile from EC2NodeClass spec.role (give the node role's name there, e.g. karpenter-convert --node-role), or name an existing profile in EC2NodeClass spec.instanceProfile. The controller's IAM policy needs the iam:*InstanceProfile actions (docs/aws/controller-policy.json)."},
	{"settings.aws.tags", "", "removed: tags of launched resources belong to EC2NodeClass spec.tags."},
	{"settings.aws.enablePodENI", "", "removed: pod ENI resources (vpc.amazonaws.com/pod-eni) are always considered."},
	{"settings.aws.enableENILimitedPodDensity", "", "removed: set kubelet maxPods or podsPerCore on the EC2NodeClass instead."},
	{"settings.aws.nodeNameConvention", "", "removed: node names follow the instance's private DNS name."},
	{"settings.aws.assumeRoleARN", "", "removed in v1 (ASSUME_ROLE_ARN): give the controller its role through IRSA (serviceAccount.annotations eks.amazonaws.com/role-arn) or EKS Pod Identity."},
	{"settings.aws.assumeRoleDuration", "", "removed in v1 (ASSUME_ROLE_DURATION) with assumeRoleARN."},
	{"settings.featureGates.drift", "", "drift is always on in v1 and cannot be disabled; pace it with NodePool disruption budgets (reasons: [Drifted])."},
	{"settings.featureGates.driftEnabled", "", "drift is always on in v1 and cannot be disabled; pace it with NodePool disruption budgets (reasons: [Drifted])."},
	{"logConfig.outputPaths", "logOutputPaths", "logConfig was replaced by top-level values."},
	{"logConfig.errorOutputPaths", "logErrorOutputPaths", "logConfig was replaced by top-level values."},
	{"logConfig.logLevel.controller", "logLevel", "one level for the whole controller in v1."},
	{"logConfig.logLevel.global", "logLevel", "one level for the whole controller in v1."},
	{"logConfig.logLevel.webhook", "", "one level for the whole controller in v1 (logLevel)."},
	{"logConfig.logEncoding", "", "logs are always JSON in v1."},
	{"logConfig.enabled", "", "logConfig was replaced by logLevel, logOutputPaths and logErrorOutputPaths."},
	{"logEncoding", "", "logs are always JSON in v1."},
	{"webhook.serviceNamespace", "", "the webhook's Service is in the release namespace."},
}

// envMoves are controller.env variables that changed in v1.
var envMoves = map[string]string{
	"LEADER_ELECT":                "renamed to DISABLE_LEADER_ELECTION, with the opposite meaning (LEADER_ELECT=false became DISABLE_LEADER_ELECTION=true).",
	"LOGGING_CONFIG":              "dropped in v1: use logLevel, logOutputPaths and logErrorOutputPaths.",
	"ASSUME_ROLE_ARN":             "dropped in v1: use IRSA or EKS Pod Identity.",
	"ASSUME_ROLE_DURATION":        "dropped in v1 with ASSUME_ROLE_ARN.",
	"AWS_ENI_LIMITED_POD_DENSITY": "dropped: set kubelet maxPods or podsPerCore on the EC2NodeClass.",
}

// Convert returns v1 values for old (v0.3x) values, and a note for every key
// it moved, renamed, dropped or does not know. old is not modified.
func Convert(old map[string]any) (map[string]any, []Note) {
	v := deepCopy(old).(map[string]any)
	var notes []Note
	for _, m := range moves {
		val, ok := take(v, m.from)
		if !ok {
			continue
		}
		if m.to == "" {
			notes = append(notes, Note{Key: m.from, Message: m.why})
			continue
		}
		if m.from == "settings.aws.reservedENIs" {
			val = fmt.Sprint(val)
		}
		if _, exists := get(v, m.to); exists {
			notes = append(notes, Note{Key: m.from, To: m.to, Message: m.why + " " + m.to + " was set too and wins; the old value was dropped."})
			continue
		}
		put(v, m.to, val)
		notes = append(notes, Note{Key: m.from, To: m.to, Message: m.why})
	}
	// Whatever is left of settings.aws and logConfig has no v1 key.
	for _, parent := range []string{"settings.aws", "logConfig"} {
		if rest, ok := take(v, parent); ok {
			m, _ := rest.(map[string]any)
			for _, k := range slices.Sorted(maps.Keys(m)) {
				notes = append(notes, Note{Key: parent + "." + k, Message: "no v1 value; dropped."})
			}
		}
	}
	notes = append(notes, webhook(v, old)...)
	notes = append(notes, env(v)...)
	notes = append(notes, unknown(v)...)
	return v, notes
}

// webhook: v0.3x's webhook was the validating and defaulting webhook, on by
// default; in v1 webhook.enabled turns on the v1beta1 conversion webhook,
// off by default and only needed to apply v1beta1 manifests.
func webhook(v, old map[string]any) []Note {
	enabled, ok := get(v, "webhook.enabled")
	if !ok {
		return nil
	}
	if b, isBool := enabled.(bool); isBool && !b {
		return []Note{{Key: "webhook.enabled", To: "webhook.enabled", Message: "kept (false): v1 validates NodePools and EC2NodeClasses with CEL rules in the CRDs."}}
	}
	_, _ = take(v, "webhook.enabled")
	return []Note{{Key: "webhook.enabled", Message: "dropped (v1 default: false). v0.3x's webhook validated and defaulted objects; v1 does that with CEL rules in the CRDs. In v1, webhook.enabled=true serves v1beta1 NodePools and EC2NodeClasses through the conversion webhook: set it (in both the karpenter and the karpenter-crd charts) only while manifests still say v1beta1."}}
}

// env rewrites controller.env entries whose variables changed.
func env(v map[string]any) []Note {
	list, ok := get(v, "controller.env")
	items, isList := list.([]any)
	if !ok || !isList || len(items) == 0 {
		return nil
	}
	var notes []Note
	var kept []any
	for _, it := range items {
		m, _ := it.(map[string]any)
		name, _ := m["name"].(string)
		why, changed := envMoves[name]
		if !changed {
			kept = append(kept, it)
			continue
		}
		key := "controller.env[" + name + "]"
		if name == "LEADER_ELECT" {
			if s := strings.ToLower(fmt.Sprint(m["value"])); s == "false" || s == "true" {
				disabled := "false"
				if s == "false" {
					disabled = "true"
				}
				kept = append(kept, map[string]any{"name": "DISABLE_LEADER_ELECTION", "value": disabled})
				notes = append(notes, Note{Key: key, To: "controller.env[DISABLE_LEADER_ELECTION]", Message: why})
				continue
			}
		}
		notes = append(notes, Note{Key: key, Message: why})
	}
	if len(kept) == 0 {
		_, _ = take(v, "controller.env")
	} else {
		put(v, "controller.env", kept)
	}
	return notes
}

// unknown notes the keys the v1 chart does not have.
func unknown(v map[string]any) []Note {
	var notes []Note
	known := set(TopLevelKeys)
	for _, k := range slices.Sorted(maps.Keys(v)) {
		if !known[k] {
			notes = append(notes, Note{Key: k, Message: "not a value of the v1 chart (kept; helm template will refuse it: remove or rename it)."})
		}
	}
	if s, ok := v["settings"].(map[string]any); ok {
		known := set(SettingsKeys)
		for _, k := range slices.Sorted(maps.Keys(s)) {
			if !known[k] {
				notes = append(notes, Note{Key: "settings." + k, Message: "not a value of the v1 chart (kept; helm template will refuse it: remove or rename it)."})
			}
		}
		for parent, gates := range map[string][]string{"featureGates": FeatureGates, "awsFeatureGates": AWSFeatureGates} {
			fg, ok := s[parent].(map[string]any)
			if !ok {
				continue
			}
			known := set(gates)
			for _, k := range slices.Sorted(maps.Keys(fg)) {
				if !known[k] {
					notes = append(notes, Note{Key: "settings." + parent + "." + k, Message: "not a feature gate of v1 (kept; helm template will refuse it)."})
				}
			}
		}
	}
	return notes
}

// Findings are the notes of Convert for the keys that must change: what
// `karpenter-convert report` prints for a values file. Values already in v1
// form give none.
func Findings(values map[string]any) []Note {
	_, notes := Convert(values)
	var out []Note
	for _, n := range notes {
		if n.Key == n.To { // kept as is (webhook.enabled: false)
			continue
		}
		out = append(out, n)
	}
	return out
}

// LooksLikeValues tells a karpenter chart values document from a Kubernetes
// object: no apiVersion/kind, and one of the chart's typical keys.
func LooksLikeValues(doc map[string]any) bool {
	if _, ok := doc["apiVersion"]; ok {
		return false
	}
	if _, ok := doc["kind"]; ok {
		return false
	}
	for _, k := range []string{"settings", "serviceAccount", "controller", "webhook", "logConfig"} {
		if _, ok := doc[k]; ok {
			return true
		}
	}
	return false
}

func get(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, p := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// take removes path and returns its value; parents left empty are removed.
func take(m map[string]any, path string) (any, bool) {
	parts := strings.Split(path, ".")
	parents := []map[string]any{m}
	cur := m
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil, false
		}
		parents, cur = append(parents, next), next
	}
	last := parts[len(parts)-1]
	val, ok := cur[last]
	if !ok {
		return nil, false
	}
	delete(cur, last)
	for i := len(parts) - 2; i >= 0; i-- {
		if len(parents[i+1]) == 0 {
			delete(parents[i], parts[i])
		}
	}
	return val, true
}

func put(m map[string]any, path string, val any) {
	parts := strings.Split(path, ".")
	cur := m
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	cur[parts[len(parts)-1]] = val
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = deepCopy(x)
		}
		return out
	}
	return v
}

func set(keys []string) map[string]bool {
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = true
	}
	return out
}
