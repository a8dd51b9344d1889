package bootstrap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// This file decides, per AMI family, how the kubelet fields of spec.kubelet
// that Karpenter does not read itself (the pass-through fields) reach the
// node's kubelet, and which of them cannot:
//
//   - AL2023 writes every field into its NodeConfig's kubelet config.
//   - AL2 merges them, as JSON, into /etc/kubernetes/kubelet/kubelet-config.json
//     before /etc/eks/bootstrap.sh runs; the few fields bootstrap.sh writes
//     over afterwards cannot be set.
//   - Bottlerocket has a settings.kubernetes key for some fields only.
//   - Windows passes fields that have a kubelet command-line flag through
//     Start-EKSBootstrap.ps1's -KubeletExtraArgs.
//
// UnappliedKubelet lists what a family cannot write; the EC2NodeClass
// controller refuses such a class (ValidationSucceeded=False) so that no
// field is silently dropped, and the generators fail on them too.

// UnappliedField is a spec.kubelet field an AMI family's bootstrap cannot
// write, with the reason.
type UnappliedField struct {
	// Field is the field's JSON name (shutdownGracePeriod).
	Field string
	// Reason says why, in words a user can act on.
	Reason string
}

// UnappliedKubelet returns the fields of k that the family's bootstrap does
// not write into the node's kubelet configuration, sorted by name. Custom
// families own their user data and AL2023 writes every field: both return
// nil. Fields with an invalid value are ValidateKubelet's to report.
func UnappliedKubelet(family string, k *awsv1.KubeletConfiguration) []UnappliedField {
	if k == nil {
		return nil
	}
	var out []UnappliedField
	switch family {
	case awsv1.AMIFamilyAL2:
		for _, key := range k.PassThroughKeys() {
			if al2BootstrapOwned[key] {
				out = append(out, UnappliedField{key, "/etc/eks/bootstrap.sh on the AL2 AMI writes its own value over it"})
			}
		}
	case awsv1.AMIFamilyBottlerocket:
		if k.PodsPerCore != nil {
			out = append(out, UnappliedField{"podsPerCore", "Bottlerocket has no pods-per-core setting"})
		}
		raw := passThroughRaw(k)
		for _, key := range sortedKeys(raw) {
			s, ok := bottlerocketKubeletSettings[key]
			if !ok {
				out = append(out, UnappliedField{key, "Bottlerocket has no settings.kubernetes key for it"})
				continue
			}
			if _, err := s.convert(raw[key]); err != nil {
				out = append(out, UnappliedField{key, err.Error()})
			}
		}
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		if k.PodsPerCore != nil {
			out = append(out, UnappliedField{"podsPerCore", "the Windows bootstrap has no pods-per-core setting"})
		}
		raw := passThroughRaw(k)
		for _, key := range sortedKeys(raw) {
			f, ok := windowsKubeletFlags[key]
			if !ok {
				out = append(out, UnappliedField{key, "the kubelet has no command-line flag for it that -KubeletExtraArgs of the Windows bootstrap can carry"})
				continue
			}
			if _, err := f.render(raw[key]); err != nil {
				out = append(out, UnappliedField{key, err.Error()})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// unappliedPassThrough is UnappliedKubelet without the fields Karpenter
// reads itself: the generators leave those out as upstream does (the
// EC2NodeClass controller still refuses them), and fail on the others.
func unappliedPassThrough(family string, k *awsv1.KubeletConfiguration) []UnappliedField {
	var out []UnappliedField
	for _, f := range UnappliedKubelet(family, k) {
		if !awsv1.IsTypedKubeletField(f.Field) {
			out = append(out, f)
		}
	}
	return out
}

// unappliedError is the generators' error for fields they cannot write
// (the EC2NodeClass controller refuses such classes before any launch).
func unappliedError(family string, fields []UnappliedField) error {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = fmt.Sprintf("spec.kubelet.%s (%s)", f.Field, f.Reason)
	}
	return fmt.Errorf("the %s AMI family cannot apply %s", family, strings.Join(parts, ", "))
}

// passThroughRaw are spec.kubelet's pass-through fields with their stored
// JSON values.
func passThroughRaw(k *awsv1.KubeletConfiguration) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, key := range k.PassThroughKeys() {
		out[key] = json.RawMessage(k.Extra[key].Raw)
	}
	return out
}

// --- AL2 ---

// al2BootstrapOwned are the kubelet-config.json fields /etc/eks/bootstrap.sh
// sets after Karpenter's merge, so a value from spec.kubelet would not last.
var al2BootstrapOwned = map[string]bool{
	"providerID":           true, // from the instance's metadata (Kubernetes 1.26+)
	"cgroupDriver":         true, // systemd, for containerd
	"systemReservedCgroup": true, // /system
	"kubeReservedCgroup":   true, // /runtime
}

// al2KubeletConfigFile is the kubelet configuration file of the AL2 EKS AMI,
// which bootstrap.sh edits with jq and passes to the kubelet with --config.
const al2KubeletConfigFile = "/etc/kubernetes/kubelet/kubelet-config.json"

// al2KubeletConfigMerge is the shell step that merges the pass-through
// fields into the AL2 AMI's kubelet-config.json (jq's recursive merge, so a
// featureGates map adds to the AMI's gates). "" when there are none. The
// JSON object is one single-quoted shell word; the command substitution in
// an assignment makes a jq failure stop the script (bash -e) before the
// file is written.
func (o Options) al2KubeletConfigMerge() (string, error) {
	raw := passThroughRaw(o.kubelet())
	if len(raw) == 0 {
		return "", nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(raw); err != nil {
		return "", fmt.Errorf("serializing spec.kubelet: %w", err)
	}
	object := strings.TrimSpace(buf.String())
	var b strings.Builder
	fmt.Fprintf(&b, "KUBELET_CONFIG=%s\n", al2KubeletConfigFile)
	fmt.Fprintf(&b, "KUBELET_CONFIG_JSON=$(jq --argjson karpenter %s '. * $karpenter' \"$KUBELET_CONFIG\")\n", shellQuote(object))
	b.WriteString("printf '%s\\n' \"$KUBELET_CONFIG_JSON\" > \"$KUBELET_CONFIG\"\n")
	return b.String(), nil
}

// shellQuote makes s one single-quoted POSIX shell word: each single quote
// inside ends the quoted text, adds an escaped quote and reopens it.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// --- Bottlerocket ---

// bottlerocketSetting is the settings.kubernetes key of a kubelet field and
// how its JSON value becomes the TOML value.
type bottlerocketSetting struct {
	key     string
	convert func(json.RawMessage) (any, error)
}

// bottlerocketKubeletSettings maps the kubelet fields Bottlerocket has a
// settings.kubernetes key for (the typed fields Karpenter reads are written
// in Bottlerocket() directly).
var bottlerocketKubeletSettings = map[string]bottlerocketSetting{
	"allowedUnsafeSysctls":            {"allowed-unsafe-sysctls", tomlStrings},
	"clusterDomain":                   {"cluster-domain", tomlString},
	"containerLogMaxFiles":            {"container-log-max-files", tomlInt},
	"containerLogMaxSize":             {"container-log-max-size", tomlString},
	"containerLogMaxWorkers":          {"container-log-max-workers", tomlInt},
	"containerLogMonitorInterval":     {"container-log-monitor-interval", tomlString},
	"cpuManagerPolicy":                {"cpu-manager-policy", tomlString},
	"cpuManagerPolicyOptions":         {"cpu-manager-policy-options", tomlCPUManagerPolicyOptions},
	"cpuManagerReconcilePeriod":       {"cpu-manager-reconcile-period", tomlString},
	"eventBurst":                      {"event-burst", tomlInt},
	"eventRecordQPS":                  {"event-qps", tomlInt},
	"imageMaximumGCAge":               {"image-maximum-gc-age", tomlString},
	"imageMinimumGCAge":               {"image-minimum-gc-age", tomlString},
	"kubeAPIBurst":                    {"kube-api-burst", tomlInt},
	"kubeAPIQPS":                      {"kube-api-qps", tomlInt},
	"maxParallelImagePulls":           {"max-parallel-image-pulls", tomlInt},
	"memoryManagerPolicy":             {"memory-manager-policy", tomlString},
	"podPidsLimit":                    {"pod-pids-limit", tomlInt},
	"registryBurst":                   {"registry-burst", tomlInt},
	"registryPullQPS":                 {"registry-qps", tomlInt},
	"reservedSystemCPUs":              {"reserved-cpus", tomlString},
	"seccompDefault":                  {"seccomp-default", tomlBool},
	"serverTLSBootstrap":              {"server-tls-bootstrap", tomlBool},
	"shutdownGracePeriod":             {"shutdown-grace-period", tomlString},
	"shutdownGracePeriodCriticalPods": {"shutdown-grace-period-for-critical-pods", tomlString},
	"singleProcessOOMKill":            {"single-process-oom-kill", tomlBool},
	"topologyManagerPolicy":           {"topology-manager-policy", tomlString},
	"topologyManagerPolicyOptions":    {"topology-manager-policy-options", tomlTopologyManagerPolicyOptions},
	"topologyManagerScope":            {"topology-manager-scope", tomlString},
}

func tomlString(raw json.RawMessage) (any, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("value %s is not a string", raw)
	}
	return s, nil
}

func tomlInt(raw json.RawMessage) (any, error) {
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("value %s is not an integer", raw)
	}
	return n, nil
}

func tomlBool(raw json.RawMessage) (any, error) {
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("value %s is not a boolean", raw)
	}
	return b, nil
}

func tomlStrings(raw json.RawMessage) (any, error) {
	var s []string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("value %s is not a list of strings", raw)
	}
	return s, nil
}

// tomlCPUManagerPolicyOptions turns the kubelet's option map
// ({"full-pcpus-only": "true"}) into Bottlerocket's list of enabled options;
// an option set to "false" is left out (off is the default). Bottlerocket
// cannot express any other value.
func tomlCPUManagerPolicyOptions(raw json.RawMessage) (any, error) {
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("value %s is not a map of strings", raw)
	}
	out := []string{}
	for _, k := range sortedKeys(m) {
		switch m[k] {
		case "true":
			out = append(out, k)
		case "false":
		default:
			return nil, fmt.Errorf("Bottlerocket's cpu-manager-policy-options only turns options on; %s=%q cannot be written", k, m[k])
		}
	}
	return out, nil
}

// tomlTopologyManagerPolicyOptions turns the kubelet's option map into
// Bottlerocket's topology-manager-policy-options table, which has the two
// options below.
func tomlTopologyManagerPolicyOptions(raw json.RawMessage) (any, error) {
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("value %s is not a map of strings", raw)
	}
	out := map[string]any{}
	for _, k := range sortedKeys(m) {
		switch k {
		case "prefer-closest-numa-nodes":
			b, err := strconv.ParseBool(m[k])
			if err != nil {
				return nil, fmt.Errorf("%s=%q is not a boolean", k, m[k])
			}
			out[k] = b
		case "max-allowable-numa-nodes":
			n, err := strconv.ParseInt(m[k], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s=%q is not an integer", k, m[k])
			}
			out[k] = n
		default:
			return nil, fmt.Errorf("Bottlerocket's topology-manager-policy-options has no option %q", k)
		}
	}
	return out, nil
}

// bottlerocketPassThrough writes the pass-through fields into
// settings.kubernetes.
func (o Options) bottlerocketPassThrough(k8s map[string]any) error {
	k := o.kubelet()
	if bad := unappliedPassThrough(awsv1.AMIFamilyBottlerocket, k); len(bad) > 0 {
		return unappliedError(awsv1.AMIFamilyBottlerocket, bad)
	}
	raw := passThroughRaw(k)
	for _, key := range sortedKeys(raw) {
		s := bottlerocketKubeletSettings[key]
		v, err := s.convert(raw[key])
		if err != nil {
			return fmt.Errorf("spec.kubelet.%s: %w", key, err)
		}
		k8s[s.key] = v
	}
	return nil
}

// --- Windows ---

// windowsFlag is the kubelet command-line flag of a kubelet field and how
// its JSON value is written as the flag's value.
type windowsFlag struct {
	name string
	kind flagKind
}

type flagKind int

const (
	flagScalar  flagKind = iota // a string, number or boolean, as is
	flagList                    // a list of strings, comma-separated
	flagMap                     // a map, key=value pairs sorted by key, comma-separated
	flagBoolMap                 // a map of booleans (featureGates), key=true|false
)

// windowsKubeletFlags maps kubelet fields to the kubelet flags that set
// them. Fields the Windows bootstrap sets itself (cgroupsPerQOS,
// enforceNodeAllocatable, resolvConf, the runtime endpoints, authentication,
// TLS files), Linux-only fields and flags whose value is split differently
// (the *PolicyOptions maps, reservedMemory) are not listed.
var windowsKubeletFlags = map[string]windowsFlag{
	"clusterDomain":                    {"--cluster-domain", flagScalar},
	"containerLogMaxFiles":             {"--container-log-max-files", flagScalar},
	"containerLogMaxSize":              {"--container-log-max-size", flagScalar},
	"cpuManagerPolicy":                 {"--cpu-manager-policy", flagScalar},
	"cpuManagerReconcilePeriod":        {"--cpu-manager-reconcile-period", flagScalar},
	"eventBurst":                       {"--event-burst", flagScalar},
	"eventRecordQPS":                   {"--event-qps", flagScalar},
	"evictionMinimumReclaim":           {"--eviction-minimum-reclaim", flagMap},
	"evictionPressureTransitionPeriod": {"--eviction-pressure-transition-period", flagScalar},
	"featureGates":                     {"--feature-gates", flagBoolMap},
	"imageMinimumGCAge":                {"--minimum-image-ttl-duration", flagScalar},
	"kubeAPIBurst":                     {"--kube-api-burst", flagScalar},
	"kubeAPIQPS":                       {"--kube-api-qps", flagScalar},
	"memoryManagerPolicy":              {"--memory-manager-policy", flagScalar},
	"nodeStatusMaxImages":              {"--node-status-max-images", flagScalar},
	"nodeStatusUpdateFrequency":        {"--node-status-update-frequency", flagScalar},
	"podPidsLimit":                     {"--pod-max-pids", flagScalar},
	"registryBurst":                    {"--registry-burst", flagScalar},
	"registryPullQPS":                  {"--registry-qps", flagScalar},
	"reservedSystemCPUs":               {"--reserved-cpus", flagScalar},
	"runtimeRequestTimeout":            {"--runtime-request-timeout", flagScalar},
	"serializeImagePulls":              {"--serialize-image-pulls", flagScalar},
	"serverTLSBootstrap":               {"--rotate-server-certificates", flagScalar},
	"streamingConnectionIdleTimeout":   {"--streaming-connection-idle-timeout", flagScalar},
	"syncFrequency":                    {"--sync-frequency", flagScalar},
	"tlsCipherSuites":                  {"--tls-cipher-suites", flagList},
	"tlsMinVersion":                    {"--tls-min-version", flagScalar},
	"topologyManagerPolicy":            {"--topology-manager-policy", flagScalar},
	"topologyManagerScope":             {"--topology-manager-scope", flagScalar},
	"volumeStatsAggPeriod":             {"--volume-stats-agg-period", flagScalar},
}

// flagValueChars are the characters a flag value may hold: it travels in a
// single-quoted PowerShell string and then on the kubelet service's command
// line, where quotes, spaces and backslashes would change its meaning.
var flagValueChars = regexp.MustCompile(`^[A-Za-z0-9._:/,=+%*@<>-]*$`)

// render writes the flag for a JSON value: --name=value for scalars,
// --name="a,b" for lists and maps (as the typed flags are written).
func (f windowsFlag) render(raw json.RawMessage) (string, error) {
	var value string
	switch f.kind {
	case flagScalar:
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return "", fmt.Errorf("value %s is not JSON", raw)
		}
		switch t := v.(type) {
		case string:
			value = t
		case json.Number:
			value = t.String()
		case bool:
			value = strconv.FormatBool(t)
		default:
			return "", fmt.Errorf("value %s is not a string, number or boolean", raw)
		}
	case flagList:
		var l []string
		if err := json.Unmarshal(raw, &l); err != nil {
			return "", fmt.Errorf("value %s is not a list of strings", raw)
		}
		value = strings.Join(l, ",")
	case flagMap:
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			return "", fmt.Errorf("value %s is not a map of strings", raw)
		}
		parts := make([]string, 0, len(m))
		for _, k := range sortedKeys(m) {
			parts = append(parts, k+"="+m[k])
		}
		value = strings.Join(parts, ",")
	case flagBoolMap:
		var m map[string]bool
		if err := json.Unmarshal(raw, &m); err != nil {
			return "", fmt.Errorf("value %s is not a map of booleans", raw)
		}
		parts := make([]string, 0, len(m))
		for _, k := range sortedKeys(m) {
			parts = append(parts, k+"="+strconv.FormatBool(m[k]))
		}
		value = strings.Join(parts, ",")
	}
	if !flagValueChars.MatchString(value) {
		return "", fmt.Errorf("value %q has characters (quotes, spaces, backslashes) that -KubeletExtraArgs cannot carry", value)
	}
	if f.kind == flagScalar {
		return f.name + "=" + value, nil
	}
	return fmt.Sprintf("%s=%q", f.name, value), nil
}

// windowsPassThroughFlags are the flags of the pass-through fields, sorted
// by field name.
func (o Options) windowsPassThroughFlags() ([]string, error) {
	k := o.kubelet()
	// The three Windows families bootstrap alike.
	if bad := unappliedPassThrough(awsv1.AMIFamilyWindows2022, k); len(bad) > 0 {
		return nil, unappliedError("Windows", bad)
	}
	raw := passThroughRaw(k)
	var out []string
	for _, key := range sortedKeys(raw) {
		flag, err := windowsKubeletFlags[key].render(raw[key])
		if err != nil {
			return nil, fmt.Errorf("spec.kubelet.%s: %w", key, err)
		}
		out = append(out, flag)
	}
	return out, nil
}
