package crdparity_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// path addresses a value in a manifest: map keys (string) and list indexes (int).
type path []any

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (p path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch s := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		case string:
			if plainKey.MatchString(s) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(s)
			} else {
				fmt.Fprintf(&b, "[%q]", s)
			}
		}
	}
	return b.String()
}

func (p path) with(segs ...any) path { return append(append(path(nil), p...), segs...) }

// mutation is one change to a valid manifest.
type mutation struct {
	// label names the mutation within its base (unique there).
	label string
	// desc says what it changes, for the report.
	desc  string
	apply func(obj map[string]any)
}

func setAt(p path, v any) mutation {
	return mutation{
		label: "set " + p.String() + "=" + compact(v, 80),
		desc:  "set " + p.String() + " = " + compact(v, 200),
		apply: func(obj map[string]any) { put(obj, p, clone(v)) },
	}
}

func deleteAt(p path) mutation {
	return mutation{
		label: "delete " + p.String(),
		desc:  "delete " + p.String(),
		apply: func(obj map[string]any) { remove(obj, p) },
	}
}

// named gives a set of changes one label and description.
func named(label string, ms ...mutation) mutation {
	descs := make([]string, 0, len(ms))
	for _, m := range ms {
		descs = append(descs, m.desc)
	}
	return mutation{label: label, desc: strings.Join(descs, "; "), apply: func(obj map[string]any) {
		for _, m := range ms {
			m.apply(obj)
		}
	}}
}

// clone deep-copies a JSON-like value.
func clone(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = clone(x)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = clone(x)
		}
		return l
	}
	return v
}

func lookup(v any, p path) (any, bool) {
	for _, s := range p {
		switch s := s.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[s]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || s >= len(l) {
				return nil, false
			}
			v = l[s]
		}
	}
	return v, true
}

// put sets the value at p, creating maps on the way (a list index must
// exist, or be the list's length to append).
func put(obj map[string]any, p path, v any) {
	var cur any = obj
	for i, s := range p {
		last := i == len(p)-1
		switch s := s.(type) {
		case string:
			m := cur.(map[string]any)
			if last {
				m[s] = v
				return
			}
			next, ok := m[s]
			if _, isMap := next.(map[string]any); !ok || (!isMap && !isList(next)) {
				if _, nextIsInt := p[i+1].(int); nextIsInt {
					next = []any{}
				} else {
					next = map[string]any{}
				}
				m[s] = next
			}
			if l, ok := next.([]any); ok {
				if idx := p[i+1].(int); idx == len(l) {
					l = append(l, nil)
					m[s] = l
					next = l
				}
			}
			cur = next
		case int:
			l := cur.([]any)
			if last {
				l[s] = v
				return
			}
			if l[s] == nil {
				l[s] = map[string]any{}
			}
			cur = l[s]
		}
	}
}

func isList(v any) bool { _, ok := v.([]any); return ok }

func remove(obj map[string]any, p path) {
	parent, ok := lookup(obj, p[:len(p)-1])
	if !ok {
		return
	}
	if m, ok := parent.(map[string]any); ok {
		delete(m, p[len(p)-1].(string))
	}
}

func compact(v any, max int) string {
	data, _ := json.Marshal(v)
	s := string(data)
	if len(s) > max {
		s = s[:max] + fmt.Sprintf("...(%d chars)", len(s))
	}
	return s
}

// walker generates the schema-driven mutations of one base: for every field
// of upstream's schema under spec, present in the base or a direct child of
// a present object, the values a user could get wrong.
type walker struct {
	// enums are all enums of the kind's schema (an enum look-alike is also
	// another enum's member).
	enums [][]string
	// once holds the field paths (list indexes dropped) whose long candidate
	// lists (pattern candidates, map keys) were already generated: each is
	// tried on one base only.
	once map[string]bool
	out  []mutation
}

// first tells whether the candidate list what of p's field is new.
func (w *walker) first(p path, what string) bool {
	var segs []string
	for _, s := range p {
		if k, ok := s.(string); ok {
			segs = append(segs, k)
		} else {
			segs = append(segs, "[]")
		}
	}
	key := strings.Join(segs, "/") + " " + what
	if w.once[key] {
		return false
	}
	w.once[key] = true
	return true
}

func (w *walker) add(m mutation) { w.out = append(w.out, m) }

func schemaType(s map[string]any) string {
	if b, _ := s["x-kubernetes-int-or-string"].(bool); b {
		return "int-or-string"
	}
	if t, ok := s["type"].(string); ok {
		return t
	}
	return "any"
}

func props(s map[string]any) map[string]any { m, _ := s["properties"].(map[string]any); return m }

func num(s map[string]any, key string) (int64, bool) {
	switch v := s[key].(type) {
	case float64:
		return int64(v), true
	case int64:
		return v, true
	case int:
		return int64(v), true
	}
	return 0, false
}

func enumOf(s map[string]any) []string {
	l, _ := s["enum"].([]any)
	out := make([]string, 0, len(l))
	for _, v := range l {
		if str, ok := v.(string); ok {
			out = append(out, str)
		}
	}
	return out
}

func collectEnums(s map[string]any, out *[][]string) {
	if e := enumOf(s); len(e) > 0 {
		*out = append(*out, e)
	}
	for _, k := range slices.Sorted(maps.Keys(props(s))) {
		collectEnums(props(s)[k].(map[string]any), out)
	}
	if it, ok := s["items"].(map[string]any); ok {
		collectEnums(it, out)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		collectEnums(ap, out)
	}
}

// sample is a plausible value of a schema, used where the base has none.
func sample(s map[string]any) any {
	if e := enumOf(s); len(e) > 0 {
		return e[0]
	}
	switch schemaType(s) {
	case "string":
		return "v"
	case "integer", "number":
		if m, ok := num(s, "minimum"); ok {
			return m
		}
		return int64(1)
	case "boolean":
		return true
	case "object":
		return map[string]any{}
	case "array":
		return []any{}
	case "int-or-string":
		return "1"
	}
	return "v"
}

// patternCandidates are tried on every string field with a pattern or a
// format: durations, percentages, quantities, cron, AWS ids, label-ish
// strings, each with near misses.
var patternCandidates = []string{
	" ", "a b", "-1", "0", "1", "abc", "a_b", "-a", "Never", "never", "0s", "1h30m", "1h30s", "1d", "1.5h",
	"10%", "100%", "101%", "-10%", "+10%", "-100%", "-101%", "1.5", "1e3", "10Gi", "64T", "65T", "59000Gi", "59001Gi",
	"ami-0abc", "sg-0abc", "subnet-0abc", "cr-0ABC", "pg-0abc", "123456789012", "12345678901",
	"@hourly", "* * * *", "example.com/x", "a/b/c", "2026-01-02T03:04:05Z",
}

func (w *walker) walk(s map[string]any, p path, v any, present bool) {
	t := schemaType(s)
	last := p[len(p)-1]
	if _, isKey := last.(string); present && isKey {
		w.add(deleteAt(p))
	}
	// Emptied.
	switch t {
	case "string", "int-or-string":
		w.add(setAt(p, ""))
	case "array":
		w.add(setAt(p, []any{}))
	case "object":
		w.add(setAt(p, map[string]any{}))
	}
	// Wrong-typed.
	wrong := []struct {
		types string
		v     any
	}{
		{"string", "abc"}, {"integer number", int64(7)}, {"string", "7"}, {"boolean", true},
		{"object", map[string]any{"x": "y"}}, {"array", []any{"x"}},
	}
	for _, wv := range wrong {
		if strings.Contains(wv.types, t) || (t == "int-or-string" && (wv.types == "string" || wv.types == "integer number")) {
			continue
		}
		if t == "any" && wv.types != "object" && wv.types != "array" {
			continue
		}
		w.add(setAt(p, wv.v))
	}
	// Boundaries.
	if t == "integer" || t == "number" {
		if m, ok := num(s, "minimum"); ok {
			w.add(setAt(p, m-1))
			w.add(setAt(p, m))
		} else {
			w.add(setAt(p, int64(-1)))
			w.add(setAt(p, int64(0)))
		}
		if m, ok := num(s, "maximum"); ok {
			w.add(setAt(p, m))
			w.add(setAt(p, m+1))
		}
		if s["format"] == "int32" {
			w.add(setAt(p, int64(1)<<31))
		}
	}
	cur, _ := v.(string)
	if t == "string" {
		if m, ok := num(s, "minLength"); ok {
			if m > 0 {
				w.add(setAt(p, strings.Repeat("a", int(m-1))))
			}
			w.add(setAt(p, strings.Repeat("a", int(m+1))))
		}
		if m, ok := num(s, "maxLength"); ok {
			w.add(setAt(p, strings.Repeat("a", int(m))))
			w.add(setAt(p, strings.Repeat("a", int(m+1))))
		}
	}
	// Enum look-alikes.
	if e := enumOf(s); len(e) > 0 {
		in := map[string]bool{}
		for _, x := range e {
			in[x] = true
		}
		for _, x := range e {
			w.add(setAt(p, x))
			for _, alike := range []string{strings.ToLower(x), strings.ToUpper(x), x + " "} {
				if !in[alike] {
					w.add(setAt(p, alike))
				}
			}
		}
		// Members of (at most two) other enums.
		others := 0
		for _, other := range w.enums {
			for _, x := range other {
				if others < 2 && !in[x] && !in[strings.ToLower(x)] {
					w.add(setAt(p, x))
					others++
					break
				}
			}
		}
	}
	// Pattern and rule near-misses.
	_, hasPattern := s["pattern"]
	_, hasFormat := s["format"]
	_, hasRules := s["x-kubernetes-validations"]
	if (t == "string" && len(enumOf(s)) == 0 && (hasPattern || hasFormat || hasRules)) || (t == "int-or-string" && hasPattern) {
		if cur != "" {
			for _, nm := range []string{cur + " ", " " + cur, cur + "!", strings.ToUpper(cur), cur[:len(cur)-1], "-" + cur} {
				w.add(setAt(p, nm))
			}
		}
		if (hasPattern || hasFormat) && w.first(p, "patterns") {
			for _, c := range patternCandidates {
				w.add(setAt(p, c))
			}
		}
	}
	if t == "int-or-string" {
		w.add(setAt(p, int64(-1)))
		w.add(setAt(p, int64(0)))
		w.add(setAt(p, 1.5))
	}
	switch t {
	case "object", "any":
		w.walkObject(s, p, v)
	case "array":
		w.walkArray(s, p, v)
	}
}

// mapKeyCandidates are keys tried in every schema'd map: restricted label
// and tag domains, near misses of them, and malformed keys.
var mapKeyCandidates = []string{
	"karpenter.sh/nodepool", "karpenter.sh/nodeclaim", "karpenter.sh/capacity-type", "karpenter.sh/custom",
	"kubernetes.io/hostname", "kubernetes.io/custom", "kubernetes.io/arch", "node.kubernetes.io/instance-type",
	"topology.kubernetes.io/zone", "example.k8s.io/x", "kops.k8s.io/x", "node-restriction.kubernetes.io/x",
	"karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/custom", "karpenter.k8s.aws/ec2nodeclass",
	"eks:eks-cluster-name", "kubernetes.io/cluster/dev", "aws:x", "cpu", "memory", "pods", "nodes",
	"nvidia.com/gpu", "example.com/x", "bad key", "-bad", strings.Repeat("k", 64), "a/b/c",
}

func (w *walker) walkObject(s map[string]any, p path, v any) {
	m, _ := v.(map[string]any)
	if v == nil {
		return
	}
	if ps := props(s); len(ps) > 0 {
		for _, k := range slices.Sorted(maps.Keys(ps)) {
			child, ok := m[k]
			w.walk(ps[k].(map[string]any), p.with(k), child, ok)
		}
	}
	ap, typed := s["additionalProperties"].(map[string]any)
	if typed && schemaType(ap) != "any" {
		val := sample(ap)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			val = m[k]
			break
		}
		for _, k := range mapKeyCandidates {
			if _, exists := m[k]; !exists && w.first(p, "key "+k) {
				w.add(setAt(p.with(k), clone(val)))
			}
		}
		if max, ok := num(s, "maxProperties"); ok {
			big := map[string]any{}
			for i := int64(0); i <= max; i++ {
				big[fmt.Sprintf("k%03d", i)] = clone(val)
			}
			w.add(setAt(p, big))
			delete(big, "k000")
			w.add(setAt(p, big))
		}
		if keys := slices.Sorted(maps.Keys(m)); len(keys) > 0 {
			w.walk(ap, p.with(keys[0]), m[keys[0]], true)
		} else {
			w.walk(ap, p.with("example.com/k"), nil, false)
		}
		return
	}
	if len(props(s)) == 0 {
		// An open object (preserve-unknown-fields): each present key with
		// other types, and an unknown key.
		for _, k := range slices.Sorted(maps.Keys(m)) {
			w.add(deleteAt(p.with(k)))
			for _, wv := range []any{"abc", int64(-1), true, map[string]any{"x": "y"}, []any{"x"}} {
				w.add(setAt(p.with(k), wv))
			}
		}
		w.add(setAt(p.with("unknownField"), "x"))
	}
}

func (w *walker) walkArray(s map[string]any, p path, v any) {
	items, _ := s["items"].(map[string]any)
	if items == nil || v == nil {
		return
	}
	l, _ := v.([]any)
	var elem any = sample(items)
	if len(l) > 0 {
		elem = l[0]
	}
	repeat := func(n int64) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = clone(elem)
		}
		return out
	}
	if m, ok := num(s, "minItems"); ok && m > 0 {
		w.add(setAt(p, repeat(m-1)))
	}
	if m, ok := num(s, "maxItems"); ok {
		w.add(named(fmt.Sprintf("%s: %d copies of one item (maxItems)", p, m), setAt(p, repeat(m))))
		w.add(named(fmt.Sprintf("%s: %d copies of one item (maxItems+1)", p, m+1), setAt(p, repeat(m+1))))
	}
	if len(l) > 0 {
		w.add(named(p.String()+": first item twice", setAt(p, append(clone(l).([]any), clone(l[0])))))
		w.walk(items, p.with(0), l[0], true)
		if len(l) > 1 {
			w.walk(items, p.with(len(l)-1), l[len(l)-1], true)
		}
	} else {
		w.add(setAt(p, []any{clone(elem)}))
	}
}
