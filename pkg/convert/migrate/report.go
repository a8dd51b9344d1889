package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/karpenter-go/karpenter/pkg/convert/values"
)

// Rule identifiers of findings, stable for scripts reading -o json.
const (
	RuleExpirationForceful   = "expiration-forceful"
	RuleHopLimit             = "imds-hop-limit"
	RuleDoNotDisrupt         = "do-not-disrupt"
	RuleDisruptedTaint       = "disrupted-taint"
	RuleUbuntuDropped        = "ubuntu-dropped"
	RuleAL2023GPU            = "al2023-gpu"
	RuleDriftAlwaysOn        = "drift-always-on"
	RuleManagedByTag         = "managed-by-tag"
	RuleConversionWebhook    = "conversion-webhook"
	RuleKubeletMoved         = "kubelet-moved"
	RuleConsolidationRenamed = "consolidation-renamed"
	RuleNodeClassRefGroup    = "nodeclassref-group"
	RuleCustomUnregistered   = "custom-ami-unregistered-taint"
	RuleLeaderElect          = "leader-elect-renamed"
	RuleHelmValues           = "helm-values"
)

// Finding is one breaking change that touches one object.
type Finding struct {
	Rule      string `json:"rule"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Source    string `json:"source"`
	Field     string `json:"field"`
	Change    string `json:"change"`
	Action    string `json:"action"`
}

// Object is how the finding names its object: Kind/namespace/name.
func (f Finding) Object() string {
	if f.Kind == "" && f.Name == "" {
		return "document without kind (e.g. a values file)"
	}
	name := f.Name
	if name == "" {
		name = "<no name>"
	}
	if f.Namespace != "" {
		name = f.Namespace + "/" + name
	}
	return f.Kind + "/" + name
}

// The texts of the findings. They say what changed in v1 and what to do.
const (
	changeExpiration = "Expiration is forceful in v1: an expired node is drained at once, without waiting for replacement capacity and without disruption budgets holding it back."
	actionExpiration = "Check the value is what you want (Never turns expiry off); set spec.template.spec.terminationGracePeriod to bound how long draining may take; protect critical pods with PodDisruptionBudgets."

	changeHopLimit = "The default IMDS hop limit drops from 2 to 1 in v1: pods that are not on the host network can no longer reach instance metadata (e.g. aws-load-balancer-controller, Flux image automation)."
	actionHopLimit = "karpenter-convert writes httpPutResponseHopLimit: 2 to keep today's behaviour; lower it to 1 only once no pod needs IMDS (use IRSA or Pod Identity)."

	changeDoNotDisrupt = "karpenter.sh/do-not-evict and karpenter.sh/do-not-consolidate are ignored by v1."
	actionDoNotDisrupt = "Replace the annotation with karpenter.sh/do-not-disrupt: \"true\" (on pods and on nodes)."

	changeDisruptedTaint = "The taint on nodes being disrupted is karpenter.sh/disrupted:NoSchedule in v1, not karpenter.sh/disruption=disrupting:NoSchedule."
	actionDisruptedTaint = "Tolerate key karpenter.sh/disrupted (operator Exists) instead, or better drop the toleration: pods tolerating it land on nodes about to go away."

	changeUbuntu = "Ubuntu is not an AMI family in v1."
	actionUbuntu = "Select your Ubuntu AMIs with amiSelectorTerms (id, or name and owner 099720109477); karpenter-convert then makes the class amiFamily AL2 (same userData format) and keeps Ubuntu's /dev/sda1 root volume."

	changeAL2023GPU = "Discovered standard AL2023 AMIs are no longer considered for GPU or accelerator instance types in v1; the converted class uses alias al2023@latest."
	actionAL2023GPU = "If GPU/Neuron workloads use this class, select the accelerated AMIs explicitly with non-alias amiSelectorTerms (and pin a version instead of @latest)."

	changeDrift = "Drift is always on in v1; the Drift feature gate is gone and cannot disable it."
	actionDrift = "Remove the setting. Nodes whose NodePool or EC2NodeClass changed will be replaced; use disruption budgets (reasons: [Drifted]) to pace it."

	changeManagedBy = "The karpenter.sh/managed-by tag is no longer written in v1; eks:eks-cluster-name (value: cluster name) replaces it."
	actionManagedBy = "Update IAM policy conditions and tooling that match on karpenter.sh/managed-by to use eks:eks-cluster-name; remove it from spec.tags."

	changeWebhook = "v1 serves v1beta1 only through a conversion webhook, which rewrites what is stored; a GitOps controller (Flux, Argo CD) applying v1beta1 manifests then fights it (endless diffs, stripped annotations)."
	actionWebhook = "Convert the manifests with karpenter-convert and commit the v1 versions, then disable the webhook (Helm value webhook.enabled: false on the karpenter and karpenter-crd charts)."

	changeKubelet = "kubelet moved from the NodePool (spec.template.spec.kubelet) to the EC2NodeClass (spec.kubelet) in v1."
	actionKubelet = "karpenter-convert moves it and splits an EC2NodeClass shared by NodePools with different kubelets (those NodePools' nodes are replaced once); convert NodePools together with their EC2NodeClasses."

	changeConsolidation = "consolidationPolicy WhenUnderutilized is called WhenEmptyOrUnderutilized in v1, and consolidateAfter is required."
	actionConsolidation = "karpenter-convert writes WhenEmptyOrUnderutilized with consolidateAfter: 0s, which is the v1beta1 behaviour."

	changeNodeClassRef = "nodeClassRef.apiVersion is replaced by nodeClassRef.group in v1, and group, kind and name are all required."
	actionNodeClassRef = "karpenter-convert writes group karpenter.k8s.aws and kind EC2NodeClass."

	changeCustom = "With amiFamily Custom, v1 expects nodes to register with the karpenter.sh/unregistered:NoExecute taint, which Karpenter removes once it synced the node."
	actionCustom = "Add --register-with-taints=karpenter.sh/unregistered:NoExecute to the kubelet arguments in your userData."

	changeLeaderElect = "LEADER_ELECT is replaced by DISABLE_LEADER_ELECTION in v1 (inverted meaning)."
	actionLeaderElect = "Set DISABLE_LEADER_ELECTION=true where LEADER_ELECT=false was set, and remove LEADER_ELECT."
)

var (
	driftGatePattern = regexp.MustCompile(`(?i)\bdrift(enabled)?\s*=\s*false\b`)
	// webhookDisabledPattern finds webhook.enabled: false in Helm values
	// given as a YAML string (Argo CD spec.source.helm.values).
	webhookDisabledPattern = regexp.MustCompile(`(?m)^\s*webhook:\s*\n\s+enabled:\s*false\b`)
)

// Report lists every breaking change of the move to v1 that touches the
// documents, in input order. It reads any manifest: Karpenter objects,
// workloads, nodes, Helm releases and values files, CRDs. What the converter
// would refuse or drop is a finding too (unknown fields, objects it cannot
// convert, outputs that collide), so a clean report means the conversion
// goes through.
func Report(docs []Document) []Finding {
	refused, duplicates := conversionProblems(docs)
	successors := newSuccessors(docs)
	var out []Finding
	for _, d := range docs {
		r := &reporter{doc: d}
		for _, u := range unknownFields(d) {
			action := actionUnknownField
			if u.Suggestion != "" {
				action = fmt.Sprintf("Did you mean %q? %s", u.Suggestion, actionUnknownField)
			}
			r.add(RuleUnknownField, u.Path, changeUnknownField, action)
		}
		for _, err := range refused[d.Source] {
			r.add(RuleNotConvertible, "(object)", changeNotConvertible, "Fix it: "+err.Error())
		}
		r.karpenter()
		r.awsMigration()
		r.oldHashes()
		r.walk(d.Object, nil)
		r.workloadSelectors(d.Object, nil)
		r.gitops()
		r.helmValues()
		if s := successors.of(d); s != "" {
			r.add(RuleMixedMigration, "metadata.name", changeMixed+" Its successor: "+s+".", actionMixed)
		}
		for _, dup := range duplicates[d.Source] {
			r.add(RuleDuplicateOutput, "metadata.name", changeDuplicate+" "+dup, actionDuplicate)
		}
		out = append(out, r.findings...)
	}
	return out
}

// EmptyFileFindings reports files that hold no document.
func EmptyFileFindings(files []string) []Finding {
	out := make([]Finding, 0, len(files))
	for _, f := range files {
		out = append(out, Finding{Rule: RuleEmptyInput, Kind: "File", Name: f, Source: f, Field: "(file)", Change: changeEmptyInput, Action: actionEmptyInput})
	}
	return out
}

// conversionProblems converts the documents as karpenter-convert would and
// returns, per input document, the errors that refuse it (unknown fields
// aside: they are reported field by field) and the outputs it shares with
// another document.
func conversionProblems(docs []Document) (map[Source][]error, map[Source][]string) {
	refused := map[Source][]error{}
	dups := map[Source][]string{}
	res, err := Convert(docs, Options{To: TargetV1})
	var errs Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			var oe *ObjectError
			var uf UnknownFieldsError
			if errors.As(e, &oe) && !errors.As(e, &uf) {
				refused[oe.Source] = append(refused[oe.Source], oe.Err)
			}
		}
		return refused, dups
	}
	if res == nil {
		return refused, dups
	}
	for _, d := range res.Duplicates {
		for _, src := range d.Sources {
			var others []string
			for _, o := range d.Sources {
				if o != src {
					others = append(others, o.String())
				}
			}
			dups[src] = append(dups[src], fmt.Sprintf("Converted, it is %s, which %s also produces.", objectName(d.Kind, d.Name), strings.Join(others, " and ")))
		}
	}
	return refused, dups
}

// successors indexes the new objects (NodePool, EC2NodeClass of v1beta1 or
// v1) by kind and name, to tell an old object that already has one.
type successors map[string][]Source

func newSuccessors(docs []Document) successors {
	s := successors{}
	for _, d := range docs {
		group, version := splitAPIVersion(d.APIVersion())
		if (version == "v1beta1" || version == "v1") && (group == "karpenter.sh" && d.Kind() == "NodePool" || group == "karpenter.k8s.aws" && d.Kind() == "EC2NodeClass") {
			s[d.Kind()+"/"+d.Name()] = append(s[d.Kind()+"/"+d.Name()], d.Source)
		}
	}
	return s
}

// of names the new object an alpha document converts into, when the input
// already has one ("NodePool "default" (new/nodepool.yaml, document 1)").
func (s successors) of(d Document) string {
	group, version := splitAPIVersion(d.APIVersion())
	var kind string
	switch {
	case group == "karpenter.sh" && version == "v1alpha5" && d.Kind() == "Provisioner":
		kind = "NodePool"
	case group == "karpenter.k8s.aws" && version == "v1alpha1" && d.Kind() == "AWSNodeTemplate":
		kind = "EC2NodeClass"
	default:
		return ""
	}
	srcs := s[kind+"/"+d.Name()]
	if len(srcs) == 0 {
		return ""
	}
	where := make([]string, len(srcs))
	for i, src := range srcs {
		where[i] = src.String()
	}
	return fmt.Sprintf("%s in %s", objectName(kind, d.Name()), strings.Join(where, "; "))
}

type reporter struct {
	doc      Document
	findings []Finding
	seen     map[string]bool
}

func (r *reporter) add(rule, field, change, action string) {
	key := rule + "\x00" + field
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	if r.seen[key] {
		return
	}
	r.seen[key] = true
	kind := r.doc.Kind()
	if kind == "" && values.LooksLikeValues(r.doc.Object) {
		kind = "HelmValues"
	}
	r.findings = append(r.findings, Finding{
		Rule: rule, Kind: kind, Name: r.doc.Name(), Namespace: r.doc.Namespace(),
		Source: r.doc.Source.String(), Field: field, Change: change, Action: action,
	})
}

// karpenter checks the fields of legacy Karpenter objects.
func (r *reporter) karpenter() {
	group, version := splitAPIVersion(r.doc.APIVersion())
	o := r.doc.Object
	switch {
	case group == "karpenter.sh" && version == "v1alpha5" && r.doc.Kind() == "Provisioner":
		if v, ok := lookup(o, "spec", "ttlSecondsUntilExpired"); ok && v != nil {
			r.add(RuleExpirationForceful, "spec.ttlSecondsUntilExpired", changeExpiration, actionExpiration)
		}
		if _, ok := lookup(o, "spec", "kubeletConfiguration"); ok {
			r.add(RuleKubeletMoved, "spec.kubeletConfiguration", changeKubelet, actionKubelet)
		}
		if p, ok := lookup(o, "spec", "provider"); ok {
			if pm, ok := p.(map[string]interface{}); ok {
				r.nodeClassFields(pm, "spec.provider.", false)
			}
		}
	case group == "karpenter.sh" && version == "v1beta1" && r.doc.Kind() == "NodePool":
		expire, ok := lookup(o, "spec", "disruption", "expireAfter")
		switch {
		case !ok:
			r.add(RuleExpirationForceful, "spec.disruption.expireAfter (default 720h)", changeExpiration, actionExpiration)
		case expire != "Never":
			r.add(RuleExpirationForceful, "spec.disruption.expireAfter", changeExpiration, actionExpiration)
		}
		if policy, _ := lookup(o, "spec", "disruption", "consolidationPolicy"); policy == nil || policy == "WhenUnderutilized" {
			field := "spec.disruption.consolidationPolicy"
			if policy == nil {
				field += " (default WhenUnderutilized)"
			}
			r.add(RuleConsolidationRenamed, field, changeConsolidation, actionConsolidation)
		}
		if _, ok := lookup(o, "spec", "template", "spec", "kubelet"); ok {
			r.add(RuleKubeletMoved, "spec.template.spec.kubelet", changeKubelet, actionKubelet)
		}
		if _, ok := lookup(o, "spec", "template", "spec", "nodeClassRef", "apiVersion"); ok {
			r.add(RuleNodeClassRefGroup, "spec.template.spec.nodeClassRef.apiVersion", changeNodeClassRef, actionNodeClassRef)
		} else if ref, ok := lookup(o, "spec", "template", "spec", "nodeClassRef"); ok && ref != nil {
			r.add(RuleNodeClassRefGroup, "spec.template.spec.nodeClassRef", changeNodeClassRef, actionNodeClassRef)
		}
		r.add(RuleConversionWebhook, "apiVersion", changeWebhook, actionWebhook)
	case group == "karpenter.k8s.aws" && version == "v1alpha1" && r.doc.Kind() == "AWSNodeTemplate":
		if spec, ok := o["spec"].(map[string]interface{}); ok {
			r.nodeClassFields(spec, "spec.", false)
		}
	case group == "karpenter.k8s.aws" && version == "v1beta1" && r.doc.Kind() == "EC2NodeClass":
		if spec, ok := o["spec"].(map[string]interface{}); ok {
			r.nodeClassFields(spec, "spec.", true)
		}
		r.add(RuleConversionWebhook, "apiVersion", changeWebhook, actionWebhook)
	}
}

// nodeClassFields checks an AWSNodeTemplate spec, a Provisioner provider
// block or a v1beta1 EC2NodeClass spec.
func (r *reporter) nodeClassFields(spec map[string]interface{}, prefix string, beta bool) {
	if hop, _ := lookup(spec, "metadataOptions", "httpPutResponseHopLimit"); hop == nil {
		r.add(RuleHopLimit, prefix+"metadataOptions.httpPutResponseHopLimit (unset, was 2)", changeHopLimit, actionHopLimit)
	}
	family, _ := spec["amiFamily"].(string)
	terms := false
	if beta {
		t, _ := spec["amiSelectorTerms"].([]interface{})
		terms = len(t) > 0
	} else {
		s, _ := spec["amiSelector"].(map[string]interface{})
		terms = len(s) > 0
	}
	switch family {
	case "Ubuntu":
		r.add(RuleUbuntuDropped, prefix+"amiFamily", changeUbuntu, actionUbuntu)
	case "AL2023":
		if !terms {
			r.add(RuleAL2023GPU, prefix+"amiFamily", changeAL2023GPU, actionAL2023GPU)
		}
	case "Custom":
		r.add(RuleCustomUnregistered, prefix+"userData", changeCustom, actionCustom)
	}
}

// walk looks everywhere in any object for the annotations, tolerations,
// tags, feature gates and environment variables that changed meaning.
func (r *reporter) walk(v interface{}, path []string) {
	switch t := v.(type) {
	case map[string]interface{}:
		for _, k := range sortedKeys(t) {
			child := t[k]
			p := append(path[:len(path):len(path)], k)
			if k == "karpenter.sh/managed-by" {
				r.add(RuleManagedByTag, fieldPath(p), changeManagedBy, actionManagedBy)
			}
			switch k {
			case "annotations":
				if ann, ok := child.(map[string]interface{}); ok {
					for _, a := range []string{"karpenter.sh/do-not-evict", "karpenter.sh/do-not-consolidate"} {
						if _, ok := ann[a]; ok {
							r.add(RuleDoNotDisrupt, fieldPath(append(p[:len(p):len(p)], a)), changeDoNotDisrupt, actionDoNotDisrupt)
						}
					}
				}
			case "tolerations":
				if list, ok := child.([]interface{}); ok {
					for i, item := range list {
						if m, ok := item.(map[string]interface{}); ok && m["key"] == "karpenter.sh/disruption" {
							r.add(RuleDisruptedTaint, fieldPath(p)+"["+strconv.Itoa(i)+"]", changeDisruptedTaint, actionDisruptedTaint)
						}
					}
				}
			case "featureGates":
				if gates, ok := child.(map[string]interface{}); ok {
					for _, g := range sortedKeys(gates) {
						if strings.HasPrefix(strings.ToLower(g), "drift") && isFalse(gates[g]) {
							r.add(RuleDriftAlwaysOn, fieldPath(append(p[:len(p):len(p)], g)), changeDrift, actionDrift)
						}
					}
				}
			case "env":
				if list, ok := child.([]interface{}); ok {
					for i, item := range list {
						m, ok := item.(map[string]interface{})
						if !ok {
							continue
						}
						if m["name"] == "LEADER_ELECT" {
							r.add(RuleLeaderElect, fieldPath(p)+"["+strconv.Itoa(i)+"]", changeLeaderElect, actionLeaderElect)
						}
					}
				}
			}
			r.walk(child, p)
		}
	case []interface{}:
		for i, item := range t {
			p := append([]string(nil), path...)
			if len(p) > 0 {
				p[len(p)-1] += "[" + strconv.Itoa(i) + "]"
			}
			r.walk(item, p)
		}
	case string:
		if strings.Contains(t, "karpenter.sh/managed-by") {
			r.add(RuleManagedByTag, fieldPath(path), changeManagedBy, actionManagedBy)
		}
		if driftGatePattern.MatchString(t) {
			r.add(RuleDriftAlwaysOn, fieldPath(path), changeDrift, actionDrift)
		}
	}
}

// gitops flags Helm releases of the Karpenter charts (Flux HelmRelease, Argo
// CD Application) that leave the conversion webhook on, and Karpenter CRDs
// that convert through a webhook.
func (r *reporter) gitops() {
	o := r.doc.Object
	group, _ := splitAPIVersion(r.doc.APIVersion())
	switch {
	case r.doc.Kind() == "HelmRelease" && strings.HasSuffix(group, "fluxcd.io"):
		chart, _ := lookup(o, "spec", "chart", "spec", "chart")
		if isKarpenterChart(chart) {
			if enabled, _ := lookup(o, "spec", "values", "webhook", "enabled"); !isFalse(enabled) {
				r.add(RuleConversionWebhook, "spec.values.webhook.enabled", changeWebhook, actionWebhook)
			}
		}
	case r.doc.Kind() == "Application" && group == "argoproj.io":
		var sources []interface{}
		var fields []string
		if s, ok := lookup(o, "spec", "source"); ok {
			sources, fields = append(sources, s), append(fields, "spec.source.helm")
		}
		if s, ok := lookup(o, "spec", "sources"); ok {
			if list, ok := s.([]interface{}); ok {
				for i, item := range list {
					sources, fields = append(sources, item), append(fields, fmt.Sprintf("spec.sources[%d].helm", i))
				}
			}
		}
		for i, s := range sources {
			m, ok := s.(map[string]interface{})
			if !ok || !isKarpenterChart(m["chart"]) {
				continue
			}
			enabled, _ := lookup(m, "helm", "valuesObject", "webhook", "enabled")
			values, _ := lookup(m, "helm", "values")
			if vs, ok := values.(string); ok && webhookDisabledPattern.MatchString(vs) {
				enabled = false
			}
			if !isFalse(enabled) {
				r.add(RuleConversionWebhook, fields[i]+" (webhook.enabled)", changeWebhook, actionWebhook)
			}
		}
	case r.doc.Kind() == "CustomResourceDefinition":
		g, _ := lookup(o, "spec", "group")
		strategy, _ := lookup(o, "spec", "conversion", "strategy")
		if (g == "karpenter.sh" || g == "karpenter.k8s.aws") && strategy == "Webhook" {
			r.add(RuleConversionWebhook, "spec.conversion.strategy", changeWebhook, actionWebhook)
		}
	}
}

// helmValues flags v0.3x keys of the karpenter chart's values, in a values
// file or in a Flux HelmRelease's spec.values (pkg/convert/values; the
// values subcommand rewrites them).
func (r *reporter) helmValues() {
	var v map[string]interface{}
	prefix := ""
	switch {
	case values.LooksLikeValues(r.doc.Object):
		v = r.doc.Object
	case r.doc.Kind() == "HelmRelease":
		chart, _ := lookup(r.doc.Object, "spec", "chart", "spec", "chart")
		if m, ok := r.doc.Object["spec"].(map[string]interface{}); ok && isKarpenterChart(chart) {
			v, _ = m["values"].(map[string]interface{})
			prefix = "spec.values."
		}
	}
	if v == nil {
		return
	}
	for _, n := range values.Findings(v) {
		// Reported by their own rules already (leader-elect-renamed finds the
		// variable anywhere, drift-always-on the gate in a HelmRelease).
		if strings.HasPrefix(n.Key, "controller.env[") || (prefix != "" && strings.HasPrefix(n.Key, "settings.featureGates.drift")) {
			continue
		}
		action := "Run karpenter-convert values on the values file."
		if n.To != "" {
			action = "Set " + n.To + " instead (karpenter-convert values rewrites the file)."
		}
		r.add(RuleHelmValues, prefix+n.Key, n.Message, action)
	}
}

func isKarpenterChart(chart interface{}) bool {
	s, _ := chart.(string)
	s = s[strings.LastIndex(s, "/")+1:]
	return s == "karpenter" || s == "karpenter-crd"
}

func isFalse(v interface{}) bool {
	switch t := v.(type) {
	case bool:
		return !t
	case string:
		return strings.EqualFold(t, "false")
	}
	return false
}

func lookup(m map[string]interface{}, path ...string) (interface{}, bool) {
	var cur interface{} = m
	for _, p := range path {
		mm, ok := cur.(map[string]interface{})
		if !ok {
			return nil, false
		}
		cur, ok = mm[p]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// fieldPath joins keys with dots, bracketing keys that contain dots or
// slashes (annotation and label keys).
func fieldPath(p []string) string {
	var b strings.Builder
	for i, k := range p {
		base, idx, _ := strings.Cut(k, "[")
		if idx != "" {
			idx = "[" + idx
		}
		if strings.ContainsAny(base, "./") {
			b.WriteString("[" + base + "]" + idx)
			continue
		}
		if i > 0 {
			b.WriteString(".")
		}
		b.WriteString(base + idx)
	}
	return b.String()
}

// WriteReport prints findings as a table or as JSON.
func WriteReport(w io.Writer, findings []Finding, format string) error {
	switch format {
	case FormatJSON:
		if findings == nil {
			findings = []Finding{}
		}
		b, err := json.MarshalIndent(findings, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "", "table", FormatYAML:
		if len(findings) == 0 {
			_, err := fmt.Fprintln(w, "No breaking changes of the v1 migration touch these manifests.")
			return err
		}
		// One block per finding, wrapped to fit a 100-column terminal.
		for i, f := range findings {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintln(w, f.Object())
			for _, row := range [][2]string{{"source", f.Source}, {"field", f.Field}, {"rule", f.Rule}, {"change", f.Change}, {"action", f.Action}} {
				fmt.Fprint(w, wrap(fmt.Sprintf("  %-7s ", row[0]), row[1], reportWidth))
			}
		}
		rules := map[string]int{}
		for _, f := range findings {
			rules[f.Rule]++
		}
		keys := sortedKeys(rules)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s: %d", k, rules[k])
		}
		_, err := fmt.Fprint(w, "\n"+wrap("", fmt.Sprintf("%d findings (%s)", len(findings), strings.Join(parts, ", ")), reportWidth))
		return err
	default:
		return fmt.Errorf("unknown output format %q (expected table or json)", format)
	}
}

// reportWidth is the width report tables fit.
const reportWidth = 100

// wrap writes text after prefix, breaking at spaces so that no line passes
// width, continuation lines indented as far as the prefix. A word too long
// for a line (a deep field path) breaks after its dots.
func wrap(prefix, text string, width int) string {
	type token struct {
		s     string
		space bool // a space separates it from the token before
	}
	var tokens []token
	room := width - len(prefix)
	for _, word := range strings.Fields(text) {
		if len(word) <= room || !strings.Contains(word, ".") {
			tokens = append(tokens, token{word, true})
			continue
		}
		parts := strings.SplitAfter(word, ".")
		for i, p := range parts {
			if p != "" {
				tokens = append(tokens, token{p, i == 0})
			}
		}
	}
	var b strings.Builder
	indent := strings.Repeat(" ", len(prefix))
	line := prefix
	empty := true
	for _, t := range tokens {
		sep := ""
		if t.space && !empty {
			sep = " "
		}
		if !empty && len(line)+len(sep)+len(t.s) > width {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line, empty, sep = indent, true, ""
		}
		line += sep + t.s
		empty = false
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
	return b.String()
}
