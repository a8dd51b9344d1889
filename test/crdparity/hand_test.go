package crdparity_test

import "strings"

// handCase is a hand-written mutation of one base.
type handCase struct {
	base string
	m    mutation
}

// updateCase changes an object created for real (from base) with a
// server-side dry-run update.
type updateCase struct {
	base string
	m    mutation
}

func p(segs ...any) path { return path(segs) }

func req(key, op string, values ...string) map[string]any {
	r := map[string]any{"key": key, "operator": op}
	if values != nil {
		vs := make([]any, len(values))
		for i, v := range values {
			vs[i] = v
		}
		r["values"] = vs
	}
	return r
}

func withMin(r map[string]any, n int64) map[string]any { r["minValues"] = n; return r }

// requirementCases replace the first requirement (at reqs[0]) with each of
// the disputed shapes.
func requirementCases(base string, reqs path) []handCase {
	first := reqs.with(0)
	shapes := []struct {
		label string
		r     map[string]any
	}{
		{"value with a space", req("example.com/x", "In", "a b")},
		{"63-char value", req("example.com/x", "In", strings.Repeat("a", 63))},
		{"64-char value", req("example.com/x", "In", strings.Repeat("a", 64))},
		{"300-char value", req("example.com/x", "In", strings.Repeat("a", 300))},
		{"empty value", req("example.com/x", "In", "")},
		{"key kubernetes.io/custom", req("kubernetes.io/custom", "In", "x")},
		{"key example.k8s.io/x", req("example.k8s.io/x", "In", "x")},
		{"key node-restriction.kubernetes.io/x", req("node-restriction.kubernetes.io/x", "In", "x")},
		{"key karpenter.sh/nodepool", req("karpenter.sh/nodepool", "In", "x")},
		{"key karpenter.sh/custom", req("karpenter.sh/custom", "In", "x")},
		{"key kubernetes.io/hostname", req("kubernetes.io/hostname", "In", "x")},
		{"key karpenter.k8s.aws/custom", req("karpenter.k8s.aws/custom", "In", "x")},
		{"key karpenter.k8s.aws/instance-family", req("karpenter.k8s.aws/instance-family", "In", "m5")},
		{"key with two slashes", req("a/b/c", "In", "x")},
		{"key of 317 chars", req(strings.Repeat("a", 250)+"/"+strings.Repeat("b", 66), "In", "x")},
		{"Exists with values", req("example.com/x", "Exists", "a")},
		{"DoesNotExist with values", req("example.com/x", "DoesNotExist", "a")},
		{"Exists without values", req("example.com/x", "Exists")},
		{"NotIn without values", req("example.com/x", "NotIn")},
		{"NotIn with empty values", req("example.com/x", "NotIn", []string{}...)},
		{"Gte 3", req("example.com/x", "Gte", "3")},
		{"Lte 3", req("example.com/x", "Lte", "3")},
		{"Gt -1", req("example.com/x", "Gt", "-1")},
		{"Gt abc", req("example.com/x", "Gt", "abc")},
		{"Gt two values", req("example.com/x", "Gt", "1", "2")},
		{"Gt no values", req("example.com/x", "Gt")},
		{"Lt 0", req("example.com/x", "Lt", "0")},
		{"Gt 1.5", req("example.com/x", "Gt", "1.5")},
		{"In with no values", req("example.com/x", "In")},
		{"In with empty values", req("example.com/x", "In", []string{}...)},
		{"minValues above the values count", withMin(req("example.com/x", "In", "a"), 2)},
		{"minValues equal to the values count", withMin(req("example.com/x", "In", "a", "b"), 2)},
		{"minValues with NotIn", withMin(req("example.com/x", "NotIn", "a"), 2)},
		{"minValues with Exists", withMin(req("example.com/x", "Exists"), 1)},
		{"minValues 0", withMin(req("example.com/x", "In", "a"), 0)},
		{"minValues 51", withMin(req("example.com/x", "In", "a"), 51)},
		{"operator in lower case", req("example.com/x", "in", "a")},
		{"duplicate values", req("example.com/x", "In", "a", "a")},
	}
	var out []handCase
	for _, s := range shapes {
		out = append(out, handCase{base, named("requirement: "+s.label, setAt(first, s.r))})
	}
	out = append(out,
		handCase{base, named("requirement: the same key twice", setAt(reqs, []any{req("example.com/x", "In", "a"), req("example.com/x", "NotIn", "b")}))},
		handCase{base, named("requirement: 101 requirements", setAt(reqs, manyReqs(101)))},
		handCase{base, named("requirement: 100 requirements", setAt(reqs, manyReqs(100)))},
		handCase{base, named("requirement: unknown field", setAt(first.with("unknown"), "x"))},
	)
	return out
}

func manyReqs(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = req("example.com/k"+strings.Repeat("x", i%7), "In", "a")
	}
	return out
}

func taint(key, value, effect string) map[string]any {
	t := map[string]any{"key": key, "effect": effect}
	if value != "" {
		t["value"] = value
	}
	return t
}

// taintCases replace the taint list at list with each of the disputed shapes.
func taintCases(base string, list path) []handCase {
	shapes := []struct {
		label string
		t     map[string]any
	}{
		{"bad key", taint("bad key!", "", "NoSchedule")},
		{"bad value", taint("example.com/x", "bad value!", "NoSchedule")},
		{"empty key", taint("", "", "NoSchedule")},
		{"bad effect", taint("example.com/x", "", "NoScheduled")},
		{"effect in lower case", taint("example.com/x", "", "noschedule")},
		{"empty effect", taint("example.com/x", "", "")},
		{"no effect", map[string]any{"key": "example.com/x"}},
		{"no key", map[string]any{"effect": "NoSchedule"}},
		{"key with two slashes", taint("a/b/c", "", "NoSchedule")},
		{"value of 64 chars", taint("example.com/x", strings.Repeat("v", 64), "NoSchedule")},
		{"value of 300 chars", taint("example.com/x", strings.Repeat("v", 300), "NoSchedule")},
		{"key of 317 chars", taint(strings.Repeat("a", 250)+"/"+strings.Repeat("b", 66), "", "NoSchedule")},
		{"value with a slash", taint("example.com/x", "a/b", "NoSchedule")},
		{"NoExecute with timeAdded", map[string]any{"key": "example.com/x", "effect": "NoExecute", "timeAdded": "2026-01-02T03:04:05Z"}},
		{"bad timeAdded", map[string]any{"key": "example.com/x", "effect": "NoExecute", "timeAdded": "yesterday"}},
		{"karpenter.sh/disrupted key", taint("karpenter.sh/disrupted", "", "NoSchedule")},
		{"node.kubernetes.io/not-ready key", taint("node.kubernetes.io/not-ready", "", "NoSchedule")},
	}
	var out []handCase
	for _, s := range shapes {
		out = append(out, handCase{base, named(list.String()+": "+s.label, setAt(list, []any{s.t}))})
	}
	out = append(out,
		handCase{base, named(list.String()+": the same taint twice", setAt(list, []any{taint("example.com/x", "", "NoSchedule"), taint("example.com/x", "", "NoSchedule")}))},
		handCase{base, named(list.String()+": same key, two effects", setAt(list, []any{taint("example.com/x", "", "NoSchedule"), taint("example.com/x", "", "NoExecute")}))},
	)
	return out
}

func budget(kv ...any) map[string]any {
	b := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		b[kv[i].(string)] = kv[i+1]
	}
	return b
}

func strs(s ...string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

func nodePoolCases() []handCase {
	spec := p("spec")
	tspec := p("spec", "template", "spec")
	var out []handCase
	out = append(out, requirementCases("rich", tspec.with("requirements"))...)
	out = append(out, requirementCases("static", tspec.with("requirements"))...)
	out = append(out, taintCases("rich", tspec.with("taints"))...)
	out = append(out, taintCases("rich", tspec.with("startupTaints"))...)
	d := spec.with("disruption")
	budgets := d.with("budgets")
	add := func(base, label string, ms ...mutation) { out = append(out, handCase{base, named(label, ms...)}) }
	add("rich", "disruption without consolidateAfter", deleteAt(d.with("consolidateAfter")))
	add("minimal", "disruption with only a policy", setAt(d, map[string]any{"consolidationPolicy": "WhenEmpty"}))
	add("minimal", "disruption empty", setAt(d, map[string]any{}))
	add("rich", "consolidationPolicy Balanced", setAt(d.with("consolidationPolicy"), "Balanced"))
	add("rich", "consolidationPolicy Balanced without consolidateAfter", setAt(d.with("consolidationPolicy"), "Balanced"), deleteAt(d.with("consolidateAfter")))
	add("rich", "consolidateAfter Never", setAt(d.with("consolidateAfter"), "Never"))
	for _, b := range []struct {
		label string
		b     map[string]any
	}{
		{"nodes 101%", budget("nodes", "101%")},
		{"nodes 100%", budget("nodes", "100%")},
		{"nodes 0%", budget("nodes", "0%")},
		{"nodes 5.5%", budget("nodes", "5.5%")},
		{"nodes -1", budget("nodes", "-1")},
		{"nodes as a number", budget("nodes", int64(5))},
		{"no nodes", budget("reasons", strs("Empty"))},
		{"schedule @hourly", budget("nodes", "1", "schedule", "@hourly", "duration", "1h")},
		{"schedule @every 1h", budget("nodes", "1", "schedule", "@every 1h", "duration", "1h")},
		{"schedule with 6 fields", budget("nodes", "1", "schedule", "0 0 9 * * mon", "duration", "1h")},
		{"schedule with 4 fields", budget("nodes", "1", "schedule", "0 9 * *", "duration", "1h")},
		{"schedule out of range", budget("nodes", "1", "schedule", "99 99 * * *", "duration", "1h")},
		{"schedule with a time zone", budget("nodes", "1", "schedule", "CRON_TZ=UTC 0 9 * * *", "duration", "1h")},
		{"schedule without duration", budget("nodes", "1", "schedule", "@daily")},
		{"duration without schedule", budget("nodes", "1", "duration", "1h")},
		{"duration 1h30s", budget("nodes", "1", "schedule", "@daily", "duration", "1h30s")},
		{"duration 1h30m", budget("nodes", "1", "schedule", "@daily", "duration", "1h30m")},
		{"duration 30s", budget("nodes", "1", "schedule", "@daily", "duration", "30s")},
		{"duration 1h0s", budget("nodes", "1", "schedule", "@daily", "duration", "1h0s")},
		{"duration 0h", budget("nodes", "1", "schedule", "@daily", "duration", "0h")},
		{"reasons Unhealthy", budget("nodes", "1", "reasons", strs("Unhealthy"))},
		{"4 reasons", budget("nodes", "1", "reasons", strs("Underutilized", "Empty", "Drifted", "Unhealthy"))},
		{"3 reasons", budget("nodes", "1", "reasons", strs("Underutilized", "Empty", "Drifted"))},
		{"5 reasons with a duplicate", budget("nodes", "1", "reasons", strs("Underutilized", "Empty", "Drifted", "Unhealthy", "Empty"))},
		{"duplicate reason", budget("nodes", "1", "reasons", strs("Empty", "Empty"))},
		{"reasons empty", budget("nodes", "1", "reasons", strs())},
		{"reason in lower case", budget("nodes", "1", "reasons", strs("empty"))},
		{"reason Expired", budget("nodes", "1", "reasons", strs("Expired"))},
	} {
		add("rich", "budget: "+b.label, setAt(budgets, []any{b.b}))
	}
	add("rich", "budgets empty", setAt(budgets, []any{}))
	many := make([]any, 51)
	for i := range many {
		many[i] = budget("nodes", "1")
	}
	add("rich", "51 budgets", setAt(budgets, many))
	add("rich", "50 budgets", setAt(budgets, many[:50]))
	// Static NodePools.
	add("rich", "replicas with weight", setAt(spec.with("replicas"), int64(3)), deleteAt(spec.with("limits")))
	add("rich", "replicas with limits.cpu", setAt(spec.with("replicas"), int64(3)), deleteAt(spec.with("weight")))
	add("rich", "replicas with limits.nodes only", setAt(spec.with("replicas"), int64(3)), deleteAt(spec.with("weight")), setAt(spec.with("limits"), map[string]any{"nodes": "5"}))
	add("rich", "replicas with limits.nodes and cpu", setAt(spec.with("replicas"), int64(3)), deleteAt(spec.with("weight")), setAt(spec.with("limits"), map[string]any{"nodes": "5", "cpu": "4"}))
	add("rich", "replicas with empty limits", setAt(spec.with("replicas"), int64(3)), deleteAt(spec.with("weight")), setAt(spec.with("limits"), map[string]any{}))
	add("static", "replicas 0", setAt(spec.with("replicas"), int64(0)))
	add("static", "replicas -1", setAt(spec.with("replicas"), int64(-1)))
	add("static", "replicas with weight 10", setAt(spec.with("weight"), int64(10)))
	add("static", "replicas with limits.memory", setAt(spec.with("limits", "memory"), "10Gi"))
	add("static", "replicas with disruption", setAt(spec.with("disruption"), map[string]any{"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1m"}))
	add("static", "replicas without limits", deleteAt(spec.with("limits")))
	add("minimal", "limits.nodes on a dynamic NodePool", setAt(spec.with("limits"), map[string]any{"nodes": "5"}))
	// Template labels in restricted domains.
	for _, k := range []string{
		"karpenter.sh/nodepool", "karpenter.sh/capacity-type", "karpenter.sh/custom", "sub.karpenter.sh/x",
		"kubernetes.io/hostname", "kubernetes.io/custom", "kubernetes.io/arch", "node.kubernetes.io/instance-type",
		"topology.kubernetes.io/zone", "example.k8s.io/x", "kops.k8s.io/x", "node-restriction.kubernetes.io/x",
		"karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/custom", "karpenter.k8s.aws/ec2nodeclass",
		"example.com/x", "a/b/c", "bad key", "UPPER/x", strings.Repeat("k", 64), strings.Repeat("d", 254) + "/x",
	} {
		add("rich", "template label "+k, setAt(p("spec", "template", "metadata", "labels", k), "v"))
	}
	for _, v := range []string{"a b", strings.Repeat("v", 64), strings.Repeat("v", 63), "", "-v", "v/x"} {
		add("rich", "template label value "+compact(v, 20), setAt(p("spec", "template", "metadata", "labels", "example.com/x"), v))
	}
	add("rich", "template annotation with a long value", setAt(p("spec", "template", "metadata", "annotations", "example.com/x"), strings.Repeat("v", 300)))
	add("rich", "template metadata unknown field", setAt(p("spec", "template", "metadata", "finalizers"), strs("x")))
	add("rich", "nodeClassRef empty group", setAt(tspec.with("nodeClassRef", "group"), ""))
	add("rich", "nodeClassRef group with a slash", setAt(tspec.with("nodeClassRef", "group"), "a/b"))
	add("rich", "nodeClassRef other kind", setAt(tspec.with("nodeClassRef", "kind"), "KWOKNodeClass"))
	add("rich", "expireAfter Never", setAt(tspec.with("expireAfter"), "Never"))
	add("rich", "terminationGracePeriod Never", setAt(tspec.with("terminationGracePeriod"), "Never"))
	add("rich", "weight 0", setAt(spec.with("weight"), int64(0)))
	add("rich", "limits with a negative quantity", setAt(spec.with("limits", "cpu"), "-1"))
	return out
}

func nodeClaimCases() []handCase {
	out := requirementCases("rich", p("spec", "requirements"))
	out = append(out, taintCases("rich", p("spec", "taints"))...)
	out = append(out, taintCases("rich", p("spec", "startupTaints"))...)
	out = append(out,
		handCase{"minimal", named("resources.requests with a bad quantity", setAt(p("spec", "resources", "requests", "cpu"), "lots"))},
		handCase{"minimal", named("resources.limits (not in the schema)", setAt(p("spec", "resources", "limits", "cpu"), "1"))},
		handCase{"minimal", named("no nodeClassRef", deleteAt(p("spec", "nodeClassRef")))},
	)
	return out
}

func ec2NodeClassCases() []handCase {
	spec := p("spec")
	var out []handCase
	add := func(base, label string, ms ...mutation) { out = append(out, handCase{base, named(label, ms...)}) }
	tags := map[string]any{"team": "platform"}
	term := func(kv ...any) map[string]any { return budget(kv...) }
	// AMI selector terms.
	for _, c := range []struct {
		label string
		terms []any
	}{
		{"id with tags in one term", []any{term("id", "ami-0abc", "tags", tags)}},
		{"id with name in one term", []any{term("id", "ami-0abc", "name", "x")}},
		{"id with owner in one term", []any{term("id", "ami-0abc", "owner", "self")}},
		{"id with ssmParameter in one term", []any{term("id", "ami-0abc", "ssmParameter", "/x")}},
		{"id and tags across terms", []any{term("id", "ami-0abc"), term("tags", tags)}},
		{"id and name across terms", []any{term("id", "ami-0abc"), term("name", "x")}},
		{"name with owner", []any{term("name", "x", "owner", "amazon")}},
		{"owner only", []any{term("owner", "self")}},
		{"empty term", []any{term()}},
		{"tags with an empty value", []any{term("tags", map[string]any{"team": ""})}},
		{"tags with an empty key", []any{term("tags", map[string]any{"": "x"})}},
		{"tags with a wildcard", []any{term("tags", map[string]any{"team": "*"})}},
		{"id without the ami- prefix", []any{term("id", "0abc")}},
		{"id in upper case", []any{term("id", "ami-0ABC")}},
	} {
		add("rich", "amiSelectorTerms: "+c.label, setAt(spec.with("amiSelectorTerms"), c.terms))
	}
	// Aliases with and without amiFamily.
	for _, c := range []struct{ alias, family string }{
		{"al2023@latest", ""}, {"al2023@latest", "AL2023"}, {"al2023@latest", "AL2"}, {"al2023@latest", "Custom"},
		{"al2023@latest", "Bottlerocket"}, {"al2@latest", "AL2"}, {"al2@latest", "AL2023"}, {"al2@v20240807", ""},
		{"bottlerocket@v1.20.0", "Bottlerocket"}, {"bottlerocket@latest", "AL2023"}, {"windows2022@latest", "Windows2022"},
		{"windows2022@v1", ""}, {"windows2019@latest", "Windows2022"}, {"windows2025@latest", ""},
		{"AL2023@latest", ""}, {"al2023", ""}, {"al2023@", ""}, {"@latest", ""}, {"ubuntu@latest", ""},
		{"al2023@" + strings.Repeat("1", 23), ""}, {"al2023@" + strings.Repeat("1", 24), ""}, {"al2023@v2024 1", ""},
	} {
		ms := []mutation{setAt(spec.with("amiSelectorTerms"), []any{term("alias", c.alias)})}
		label := "alias " + c.alias
		if c.family == "" {
			ms = append(ms, deleteAt(spec.with("amiFamily")))
			label += " without amiFamily"
		} else {
			ms = append(ms, setAt(spec.with("amiFamily"), c.family))
			label += " with amiFamily " + c.family
		}
		add("rich", label, ms...)
	}
	add("rich", "alias with tags in one term", setAt(spec.with("amiSelectorTerms"), []any{term("alias", "al2023@latest", "tags", tags)}))
	add("rich", "alias with owner in one term", setAt(spec.with("amiSelectorTerms"), []any{term("alias", "al2023@latest", "owner", "self")}))
	add("rich", "alias and id across terms", setAt(spec.with("amiSelectorTerms"), []any{term("alias", "al2023@latest"), term("id", "ami-0abc")}))
	add("rich", "two aliases", setAt(spec.with("amiSelectorTerms"), []any{term("alias", "al2023@latest"), term("alias", "al2@latest")}))
	// AMI ids on a base without unknown fields for ours (upstream's id
	// pattern is not anchored).
	for _, id := range []string{" ami-0abc", "ami-0abc ", "xami-0abc", "ami-0abc!", "ami-"} {
		add("profile", "amiSelectorTerms: id "+compact(id, 20), setAt(spec.with("amiSelectorTerms"), []any{term("id", id)}))
	}
	add("rich", "no alias and no amiFamily", deleteAt(spec.with("amiFamily")))
	add("rich", "no alias with amiFamily Custom", setAt(spec.with("amiFamily"), "Custom"))
	add("rich", "no alias with amiFamily Windows2025", setAt(spec.with("amiFamily"), "Windows2025"))
	// Subnets, security groups, capacity reservations.
	for _, c := range []struct {
		field, label string
		terms        []any
	}{
		{"subnetSelectorTerms", "id with tags in one term", []any{term("id", "subnet-0abc", "tags", tags)}},
		{"subnetSelectorTerms", "id with tags in one term, tags in another", []any{term("id", "subnet-0abc", "tags", tags), term("tags", tags)}},
		{"subnetSelectorTerms", "id and tags across terms", []any{term("id", "subnet-0abc"), term("tags", tags)}},
		{"subnetSelectorTerms", "empty term", []any{term()}},
		{"subnetSelectorTerms", "name (not a subnet field)", []any{term("name", "x")}},
		{"securityGroupSelectorTerms", "id with tags in one term", []any{term("id", "sg-0abc", "tags", tags)}},
		{"securityGroupSelectorTerms", "id with name in one term", []any{term("id", "sg-0abc", "name", "x")}},
		{"securityGroupSelectorTerms", "name with tags in one term", []any{term("name", "x", "tags", tags)}},
		{"securityGroupSelectorTerms", "id with tags in one term, tags in another", []any{term("id", "sg-0abc", "tags", tags), term("tags", tags)}},
		{"securityGroupSelectorTerms", "name with tags in one term, id in another", []any{term("name", "x", "tags", tags), term("id", "sg-0abc")}},
		{"securityGroupSelectorTerms", "empty term", []any{term()}},
		{"capacityReservationSelectorTerms", "id with ownerID in one term", []any{term("id", "cr-0abc", "ownerID", "123456789012")}},
		{"capacityReservationSelectorTerms", "id with instanceMatchCriteria in one term", []any{term("id", "cr-0abc", "instanceMatchCriteria", "open")}},
		{"capacityReservationSelectorTerms", "id with tags in one term, tags in another", []any{term("id", "cr-0abc", "tags", tags), term("tags", tags)}},
		{"capacityReservationSelectorTerms", "ownerID only", []any{term("ownerID", "123456789012")}},
		{"capacityReservationSelectorTerms", "instanceMatchCriteria targeted", []any{term("instanceMatchCriteria", "targeted")}},
		{"capacityReservationSelectorTerms", "empty term", []any{term()}},
	} {
		add("rich", c.field+": "+c.label, setAt(spec.with(c.field), c.terms))
	}
	// Restricted tags.
	for _, k := range []string{
		"eks:eks-cluster-name", "kubernetes.io/cluster/dev", "kubernetes.io/cluster", "kubernetes.io/clusterx", "karpenter.sh/nodepool",
		"karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass", "karpenter.sh/managed-by", "karpenter.sh/discovery",
		"aws:cloudformation:stack-name", "Name", "", "kubernetes.io/role/x",
	} {
		add("rich", "tag "+compact(k, 40), setAt(spec.with("tags", k), "v"))
	}
	add("rich", "tag with an empty value", setAt(spec.with("tags", "team"), ""))
	add("rich", "tag value of 300 chars", setAt(spec.with("tags", "team"), strings.Repeat("v", 300)))
	// Kubelet.
	k := spec.with("kubelet")
	for _, c := range []struct {
		label string
		v     map[string]any
	}{
		{"an unknown field", map[string]any{"unknownField": int64(1)}},
		{"a field of KubeletConfiguration not in upstream's list", map[string]any{"serializeImagePulls": false}},
		{"maxPods as a string", map[string]any{"maxPods": "abc"}},
		{"maxPods -1", map[string]any{"maxPods": int64(-1)}},
		{"maxPods 0", map[string]any{"maxPods": int64(0)}},
		{"podsPerCore 0", map[string]any{"podsPerCore": int64(0)}},
		{"imageGCHighThresholdPercent 101", map[string]any{"imageGCHighThresholdPercent": int64(101)}},
		{"imageGC low above high", map[string]any{"imageGCHighThresholdPercent": int64(50), "imageGCLowThresholdPercent": int64(60)}},
		{"evictionHard with an unknown signal", map[string]any{"evictionHard": map[string]any{"bogus.signal": "5%"}}},
		{"evictionHard with a bad value", map[string]any{"evictionHard": map[string]any{"memory.available": "lots"}}},
		{"evictionSoft without a grace period", map[string]any{"evictionSoft": map[string]any{"memory.available": "5%"}}},
		{"evictionSoftGracePeriod without evictionSoft", map[string]any{"evictionSoftGracePeriod": map[string]any{"memory.available": "1m"}}},
		{"systemReserved with an unknown resource", map[string]any{"systemReserved": map[string]any{"nvidia.com/gpu": "1"}}},
		{"systemReserved with a bad quantity", map[string]any{"systemReserved": map[string]any{"cpu": "lots"}}},
		{"clusterDNS as a string", map[string]any{"clusterDNS": "10.0.0.10"}},
		{"clusterDNS with a bad address", map[string]any{"clusterDNS": strs("not-an-ip")}},
		{"cpuCFSQuota as a string", map[string]any{"cpuCFSQuota": "yes"}},
		{"empty", map[string]any{}},
	} {
		add("minimal", "kubelet "+c.label, setAt(k, c.v))
	}
	// Role and instance profile.
	add("rich", "role and instanceProfile", setAt(spec.with("instanceProfile"), "profile"))
	add("rich", "neither role nor instanceProfile", deleteAt(spec.with("role")))
	add("rich", "role empty", setAt(spec.with("role"), ""))
	add("rich", "role as an ARN", setAt(spec.with("role"), "arn:aws:iam::111122223333:role/KarpenterNodeRole"))
	add("profile", "instanceProfile empty", setAt(spec.with("instanceProfile"), ""))
	add("profile", "instanceProfile and role empty", setAt(spec.with("role"), ""))
	// Other cross-field rules.
	add("rich", "two root volumes", setAt(spec.with("blockDeviceMappings", 1, "rootVolume"), true))
	add("rich", "ebs without snapshotID or volumeSize", setAt(spec.with("blockDeviceMappings", 0, "ebs"), map[string]any{"volumeType": "gp3"}))
	add("rich", "volumeInitializationRate without snapshotID", setAt(spec.with("blockDeviceMappings", 0, "ebs", "volumeInitializationRate"), int64(200)))
	add("rich", "no primary network interface", setAt(spec.with("networkInterfaces"), []any{term("networkCardIndex", int64(0), "deviceIndex", int64(1), "interfaceType", "interface")}))
	add("rich", "two efa-only on one card", setAt(spec.with("networkInterfaces", 2), term("networkCardIndex", int64(0), "deviceIndex", int64(2), "interfaceType", "efa-only")))
	add("rich", "duplicate network interface", setAt(spec.with("networkInterfaces", 2), term("networkCardIndex", int64(0), "deviceIndex", int64(1), "interfaceType", "interface")))
	add("rich", "placementGroupSelector name and id", setAt(spec.with("placementGroupSelector", "id"), "pg-0abc"))
	add("rich", "placementGroupSelector empty", setAt(spec.with("placementGroupSelector"), map[string]any{}))
	add("rich", "connectionTracking empty", setAt(spec.with("connectionTracking"), map[string]any{}))
	add("rich", "metadataOptions empty", setAt(spec.with("metadataOptions"), map[string]any{}))
	add("rich", "volumeSize 64Ti", setAt(spec.with("blockDeviceMappings", 0, "ebs", "volumeSize"), "64Ti"))
	add("rich", "volumeSize 1Ti", setAt(spec.with("blockDeviceMappings", 0, "ebs", "volumeSize"), "1Ti"))
	add("rich", "volumeSize 20", setAt(spec.with("blockDeviceMappings", 0, "ebs", "volumeSize"), "20"))
	add("rich", "volumeSize 20Gi as a number", setAt(spec.with("blockDeviceMappings", 0, "ebs", "volumeSize"), int64(20)))
	return out
}

func nodeOverlayCases() []handCase {
	out := requirementCases("rich", p("spec", "requirements"))
	spec := p("spec")
	add := func(base, label string, ms ...mutation) { out = append(out, handCase{base, named(label, ms...)}) }
	add("rich", "price and priceAdjustment", setAt(spec.with("price"), "1.5"))
	for _, v := range []string{"+10%", "-10%", "+0.5", "-0.5", "10%", "0.5", "-100%", "-101%", "+101%", "-99.5%", "+1000%", "-.5"} {
		add("rich", "priceAdjustment "+v, setAt(spec.with("priceAdjustment"), v))
	}
	for _, v := range []string{"0", "0.001", "1.", ".5", "-1", "1e3", "$1"} {
		add("price", "price "+v, setAt(spec.with("price"), v))
	}
	for _, k := range []string{"cpu", "memory", "ephemeral-storage", "pods", "nvidia.com/gpu", "hugepages-1Gi", "example.com/x"} {
		add("rich", "capacity "+k, setAt(spec.with("capacity", k), "1"))
	}
	add("minimal", "no requirements", deleteAt(spec.with("requirements")))
	return out
}

func capacityBufferCases() []handCase {
	spec := p("spec")
	var out []handCase
	add := func(base, label string, ms ...mutation) { out = append(out, handCase{base, named(label, ms...)}) }
	add("rich", "podTemplateRef and scalableRef", setAt(spec.with("scalableRef"), map[string]any{"kind": "Deployment", "name": "web"}))
	add("rich", "podTemplateRef without replicas or limits", deleteAt(spec.with("replicas")), deleteAt(spec.with("limits")))
	add("rich", "podTemplateRef with limits only", deleteAt(spec.with("replicas")))
	add("rich", "podTemplateRef with replicas only", deleteAt(spec.with("limits")))
	add("rich", "podTemplateRef with percentage only", deleteAt(spec.with("replicas")), deleteAt(spec.with("limits")), setAt(spec.with("percentage"), int64(5)))
	add("minimal", "neither podTemplateRef nor scalableRef, with replicas", setAt(spec.with("replicas"), int64(2)))
	add("scalable", "scalableRef without apiGroup", deleteAt(spec.with("scalableRef", "apiGroup")))
	add("scalable", "scalableRef with an empty name", setAt(spec.with("scalableRef", "name"), ""))
	add("scalable", "scalableRef with limits", setAt(spec.with("limits"), map[string]any{"cpu": "4"}))
	add("rich", "provisioningStrategy other", setAt(spec.with("provisioningStrategy"), "buffer.x-k8s.io/other"))
	add("rich", "provisioningStrategy empty", setAt(spec.with("provisioningStrategy"), ""))
	add("rich", "percentage above 100", setAt(spec.with("percentage"), int64(150)))
	return out
}

// updateCases are the transition and immutability rules: base is created
// for real, then each mutation is a dry-run update of it.
func updateCases(kind string) []updateCase {
	spec := p("spec")
	switch kind {
	case "NodePool":
		return []updateCase{
			{"rich", named("dynamic to static: set replicas (weight and limits dropped)", setAt(spec.with("replicas"), int64(3)), deleteAt(spec.with("weight")), deleteAt(spec.with("limits")))},
			{"static", named("static to dynamic: unset replicas", deleteAt(spec.with("replicas")))},
			{"static", named("static: replicas 3 to 5", setAt(spec.with("replicas"), int64(5)))},
			{"static", named("static: replicas 3 to 0", setAt(spec.with("replicas"), int64(0)))},
			{"rich", named("nodeClassRef.group changed", setAt(p("spec", "template", "spec", "nodeClassRef", "group"), "karpenter.kwok.sh"))},
			{"rich", named("nodeClassRef.kind changed", setAt(p("spec", "template", "spec", "nodeClassRef", "kind"), "KWOKNodeClass"))},
			{"rich", named("nodeClassRef.name changed", setAt(p("spec", "template", "spec", "nodeClassRef", "name"), "other"))},
			{"rich", named("weight changed", setAt(spec.with("weight"), int64(7)))},
			{"rich", named("requirements changed", setAt(p("spec", "template", "spec", "requirements"), []any{req("kubernetes.io/os", "In", "linux")}))},
			{"rich", named("label added", setAt(p("metadata", "labels", "example.com/x"), "y"))},
		}
	case "NodeClaim":
		return []updateCase{
			{"rich", named("spec: requirements changed", setAt(p("spec", "requirements"), []any{req("kubernetes.io/os", "In", "linux")}))},
			{"rich", named("spec: taint added", setAt(p("spec", "taints", 1), taint("example.com/new", "", "NoSchedule")))},
			{"rich", named("spec: expireAfter changed", setAt(p("spec", "expireAfter"), "1h"))},
			{"rich", named("spec: nodeClassRef.name changed", setAt(p("spec", "nodeClassRef", "name"), "other"))},
			{"rich", named("spec: resources changed", setAt(p("spec", "resources", "requests", "cpu"), "3"))},
			{"minimal", named("spec: terminationGracePeriod added", setAt(p("spec", "terminationGracePeriod"), "1h"))},
			{"rich", named("metadata: label added", setAt(p("metadata", "labels", "example.com/x"), "y"))},
			{"rich", named("metadata: annotation added", setAt(p("metadata", "annotations", "example.com/x"), "y"))},
		}
	case "EC2NodeClass":
		return []updateCase{
			{"minimal", named("role changed", setAt(spec.with("role"), "OtherRole"))},
			{"minimal", named("role to instanceProfile", deleteAt(spec.with("role")), setAt(spec.with("instanceProfile"), "profile"))},
			{"rich", named("role changed (rich)", setAt(spec.with("role"), "OtherRole"))},
			{"profile", named("instanceProfile to role", deleteAt(spec.with("instanceProfile")), setAt(spec.with("role"), "KarpenterNodeRole-dev"))},
			{"profile", named("instanceProfile changed", setAt(spec.with("instanceProfile"), "other-profile"))},
			{"rich", named("amiFamily changed", setAt(spec.with("amiFamily"), "AL2"))},
			{"minimal", named("alias changed", setAt(spec.with("amiSelectorTerms"), []any{map[string]any{"alias": "bottlerocket@latest"}}))},
			{"rich", named("tags changed", setAt(spec.with("tags", "team"), "other"))},
		}
	case "NodeOverlay":
		return []updateCase{
			{"rich", named("weight changed", setAt(spec.with("weight"), int64(20)))},
			{"rich", named("priceAdjustment to price", deleteAt(spec.with("priceAdjustment")), setAt(spec.with("price"), "1"))},
			{"rich", named("requirements changed", setAt(spec.with("requirements"), []any{req("kubernetes.io/os", "In", "linux")}))},
		}
	case "CapacityBuffer":
		return []updateCase{
			{"rich", named("replicas changed", setAt(spec.with("replicas"), int64(5)))},
			{"rich", named("podTemplateRef to scalableRef", deleteAt(spec.with("podTemplateRef")), setAt(spec.with("scalableRef"), map[string]any{"kind": "Deployment", "name": "web"}))},
			{"scalable", named("scalableRef changed", setAt(spec.with("scalableRef", "name"), "other"))},
		}
	}
	return nil
}

func handCases(kind string) []handCase {
	switch kind {
	case "NodePool":
		return nodePoolCases()
	case "NodeClaim":
		return nodeClaimCases()
	case "EC2NodeClass":
		return ec2NodeClassCases()
	case "NodeOverlay":
		return nodeOverlayCases()
	case "CapacityBuffer":
		return capacityBufferCases()
	}
	return nil
}
