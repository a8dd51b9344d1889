package crdparity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/karpenter-go/karpenter/pkg/apis/crds"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	"github.com/karpenter-go/karpenter/pkg/test/upstream"
)

// concurrency is how many cases are in flight at once (each is one request
// to each API server).
const concurrency = 8

// testCase is one manifest sent to both API servers.
type testCase struct {
	kind, name, mutation string
	// base is the base manifest the case changes.
	base string
	// obj is the manifest of a create; for an update, the object created
	// for real from the base named updateOf is read back and mutate applied.
	obj      map[string]any
	updateOf string
	mutate   func(map[string]any)
}

// verdict is what one API server made of a case.
type verdict struct {
	accepted bool
	message  string
	object   map[string]any
}

func (v verdict) String() string {
	if v.accepted {
		return "accepted"
	}
	return "rejected: " + v.message
}

// server is one API server with the CRDs of one side.
type server struct {
	name   string
	env    *env.Environment
	client dynamic.Interface
	crds   map[string]*apiextensionsv1.CustomResourceDefinition // by group/kind
	// baseErrs are the bases (kind/base) this server refused to create for
	// the update cases.
	baseErrs map[string]string
}

func gk(group, kind string) string { return group + "/" + kind }

// upstreamCRDs reads upstream's CRD files.
func upstreamCRDs(t *testing.T, root string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	dir, err := upstream.Dir(root, upstream.AWSProviderModule, upstream.AWSProviderVersion, "pkg/apis/crds")
	if err != nil {
		t.Fatalf("upstream's CRDs: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("upstream's CRDs: no YAML in %s (%v)", dir, err)
	}
	sort.Strings(files)
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, crd)
	}
	return out
}

func startServers(t *testing.T, up, ours []*apiextensionsv1.CustomResourceDefinition) (*server, *server) {
	t.Helper()
	servers := []*server{{name: "upstream"}, {name: "ours"}}
	sets := [][]*apiextensionsv1.CustomResourceDefinition{up, ours}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range servers {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			servers[i].env, errs[i] = env.Start(env.WithCRDs(sets[i]...))
		}(i)
	}
	wg.Wait()
	for i, s := range servers {
		if s.env != nil {
			t.Cleanup(func() {
				if err := s.env.Stop(); err != nil {
					t.Errorf("stopping %s's API server: %v", s.name, err)
				}
			})
		}
		if errs[i] != nil {
			t.Fatalf("starting the API server with %s's CRDs: %v", s.name, errs[i])
		}
	}
	for i, s := range servers {
		var err error
		cfg := rest.CopyConfig(s.env.Config)
		// Unknown fields are refused (strict field validation) in the cases;
		// the warnings of the real creates would only be noise.
		cfg.WarningHandler = rest.NoWarnings{}
		if s.client, err = dynamic.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
		s.crds = map[string]*apiextensionsv1.CustomResourceDefinition{}
		s.baseErrs = map[string]string{}
		for _, c := range sets[i] {
			// What the server stores (after its defaulting), not the file.
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := s.env.Client.Get(context.Background(), clientKey(c.Name), got); err != nil {
				t.Fatalf("%s: reading back CRD %s: %v", s.name, c.Name, err)
			}
			s.crds[gk(got.Spec.Group, got.Spec.Names.Kind)] = got
		}
	}
	return servers[0], servers[1]
}

func (s *server) resource(k kindSpec) dynamic.ResourceInterface {
	crd := s.crds[gk(k.group, k.kind)]
	r := s.client.Resource(schema.GroupVersionResource{Group: k.group, Version: k.version, Resource: crd.Spec.Names.Plural})
	if k.namespaced {
		return r.Namespace("default")
	}
	return r
}

// served tells whether the server has the kind at the version upstream serves.
func (s *server) served(k kindSpec) bool {
	crd, ok := s.crds[gk(k.group, k.kind)]
	if !ok {
		return false
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == k.version && v.Served {
			return true
		}
	}
	return false
}

var createOpts = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}
var updateOpts = metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}

// apply sends one case to one server.
func (s *server) apply(ctx context.Context, k kindSpec, c testCase) verdict {
	res := s.resource(k)
	var got *unstructured.Unstructured
	var err error
	if c.updateOf != "" {
		if msg, refused := s.baseErrs[gk(k.kind, c.updateOf)]; refused {
			return verdict{message: baseNotCreated + msg}
		}
		cur, gerr := res.Get(ctx, updateName(c.updateOf), metav1.GetOptions{})
		if gerr != nil {
			return verdict{message: "reading the object to update: " + gerr.Error()}
		}
		obj := cur.Object
		c.mutate(obj)
		got, err = res.Update(ctx, &unstructured.Unstructured{Object: obj}, updateOpts)
	} else {
		got, err = res.Create(ctx, &unstructured.Unstructured{Object: clone(c.obj).(map[string]any)}, createOpts)
	}
	if err != nil {
		msg := err.Error()
		if st, ok := err.(apierrors.APIStatus); ok {
			msg = st.Status().Message
		}
		return verdict{message: shorten(msg, 600)}
	}
	return verdict{accepted: true, object: normalize(got.Object)}
}

func shorten(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// normalize drops what each server makes up by itself.
func normalize(obj map[string]any) map[string]any {
	obj = clone(obj).(map[string]any)
	if md, ok := obj["metadata"].(map[string]any); ok {
		for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"} {
			delete(md, k)
		}
	}
	return obj
}

const baseNotCreated = "the object to update could not be created: "

func updateName(base string) string { return "update-" + strings.ToLower(base) }

// manifest builds a base's object of a kind.
func manifest(t *testing.T, k kindSpec, b base, name string) map[string]any {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(b.yaml), &obj); err != nil {
		t.Fatalf("%s base %s: %v", k.kind, b.name, err)
	}
	obj = intsFromFloats(obj).(map[string]any)
	obj["apiVersion"] = k.group + "/" + k.version
	obj["kind"] = k.kind
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	md["name"] = name
	obj["metadata"] = md
	return obj
}

// intsFromFloats turns the YAML decoder's whole floats into int64.
func intsFromFloats(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = intsFromFloats(x)
		}
	case []any:
		for i, x := range t {
			t[i] = intsFromFloats(x)
		}
	case float64:
		if t == float64(int64(t)) {
			return int64(t)
		}
	}
	return v
}

func specSchema(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, version string) map[string]any {
	t.Helper()
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			data, err := json.Marshal(v.Schema.OpenAPIV3Schema)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]any{}
			if err := json.Unmarshal(data, &out); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatalf("upstream's %s has no schema for %s", crd.Name, version)
	return nil
}

// generate builds the kind's cases from its bases, upstream's schema and
// the hand-written cases. Manifests that come out the same are sent once.
func generate(t *testing.T, k kindSpec, upSchema map[string]any) []testCase {
	t.Helper()
	var out []testCase
	seen := map[string]string{}
	names := map[string]int{}
	const objName = "parity"
	addCreate := func(baseName string, m mutation) {
		var b base
		for _, x := range k.bases {
			if x.name == baseName {
				b = x
			}
		}
		if b.name == "" {
			t.Fatalf("%s: no base %q", k.kind, baseName)
		}
		obj := manifest(t, k, b, objName)
		if m.apply != nil {
			m.apply(obj)
		}
		data, _ := json.Marshal(obj)
		if _, dup := seen[string(data)]; dup {
			return
		}
		name := baseName + ": " + m.label
		if m.apply == nil {
			name = baseName + " (unchanged)"
		}
		seen[string(data)] = name
		if n := names[name]; n > 0 {
			name = fmt.Sprintf("%s #%d", name, n+1)
		}
		names[name]++
		desc := m.desc
		if desc == "" {
			desc = "none (the base itself)"
		}
		out = append(out, testCase{kind: k.kind, name: name, mutation: desc, base: baseName, obj: obj})
	}
	var enums [][]string
	collectEnums(upSchema, &enums)
	once := map[string]bool{}
	for _, b := range k.bases {
		addCreate(b.name, mutation{})
	}
	for _, b := range k.bases {
		obj := manifest(t, k, b, objName)
		w := &walker{enums: enums, once: once}
		w.walk(props(upSchema)["spec"].(map[string]any), path{"spec"}, obj["spec"], true)
		for _, m := range w.out {
			addCreate(b.name, m)
		}
	}
	for _, h := range handCases(k.kind) {
		addCreate(h.base, h.m)
	}
	for _, u := range updateCases(k.kind) {
		out = append(out, testCase{kind: k.kind, name: "update " + u.base + ": " + u.m.label, mutation: "dry-run update: " + u.m.desc, base: u.base, updateOf: u.base, mutate: u.m.apply})
	}
	return out
}

// disagreement is one input on which the servers differ, or one structural
// difference.
type disagreement struct {
	kind, name, mutation string
	upstream, ours       string
	// inherited: ours refused the case with the very error it gives for the
	// unchanged base (or could not create the base of an update), so the
	// disagreement follows from the base's.
	inherited bool
}

type row struct {
	kind                     string
	missing                  string
	cases, equal, structural int
	upAccepted, upRejected   int
}

// TestVerdictsMatchUpstream sends several hundred generated manifests per
// kind to an API server with upstream v1.15.2's CRDs and to one with ours,
// and fails on every input where the verdicts (or, for accepted inputs, the
// defaulted objects) differ, and on every difference in printer columns,
// subresources and list/map types.
func TestVerdictsMatchUpstream(t *testing.T) {
	start := time.Now()
	root, err := env.Root()
	if err != nil {
		t.Fatal(err)
	}
	upCRDs := upstreamCRDs(t, root)
	ourCRDs := crds.CRDs()
	if os.Getenv("CRDPARITY_SELF") != "" {
		// The harness's own check: upstream against itself must agree on
		// every case, defaults included.
		ourCRDs = upstreamCRDs(t, root)
		t.Log("CRDPARITY_SELF: comparing upstream's CRDs with themselves")
	}
	up, ours := startServers(t, upCRDs, ourCRDs)
	t.Logf("both API servers up with their CRDs in %s", time.Since(start).Round(time.Millisecond))
	ctx := context.Background()

	// Self-check: a manifest both CRDs must refuse (weight above 100, no
	// template) is refused by both; otherwise agreement proves nothing.
	np := kinds[0]
	invalid := map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": "self-check"}, "spec": map[string]any{"weight": int64(1000)}}
	for _, s := range []*server{up, ours} {
		if !s.served(np) {
			t.Fatalf("self-check: %s's API server does not serve NodePool %s", s.name, np.version)
		}
		if v := s.apply(ctx, np, testCase{obj: invalid}); v.accepted {
			t.Fatalf("self-check: %s's API server accepted a NodePool with weight 1000 and no template", s.name)
		}
	}

	var rows []row
	var all []disagreement
	for _, k := range kinds {
		r := row{kind: k.kind}
		upCRD, ok := up.crds[gk(k.group, k.kind)]
		if !ok {
			t.Fatalf("upstream's CRDs have no %s/%s: the module's pkg/apis/crds changed", k.group, k.kind)
		}
		structural := compareStructure(upCRD, ours.crds[gk(k.group, k.kind)])
		r.structural = len(structural)
		all = append(all, structural...)
		cases := generate(t, k, specSchema(t, upCRD, k.version))
		r.cases = len(cases)
		if len(cases) < k.minCases {
			t.Errorf("%s: only %d cases generated, want at least %d", k.kind, len(cases), k.minCases)
		}
		if !ours.served(k) {
			r.missing = fmt.Sprintf("our CRDs do not serve %s %s/%s", k.kind, k.group, k.version)
			t.Errorf("%s: %s; its %d cases were not compared", k.kind, r.missing, len(cases))
			rows = append(rows, r)
			continue
		}
		// The objects update cases start from, created for real (unknown
		// fields refused, as in the cases).
		for _, b := range k.bases {
			for _, s := range []*server{up, ours} {
				obj := manifest(t, k, b, updateName(b.name))
				_, err := s.resource(k).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{FieldValidation: "Strict"})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					if s == up {
						t.Fatalf("%s base %s: upstream's API server refused it: %v", k.kind, b.name, err)
					}
					// Ours refusing a base is reported by its create case,
					// and by its update cases through baseErrs.
					s.baseErrs[gk(k.kind, b.name)] = shorten(err.Error(), 300)
				}
			}
		}
		results := run(ctx, k, cases, up, ours)
		baseRefusals := map[string]string{}
		for i, c := range cases {
			if o := results[i][1]; c.updateOf == "" && strings.HasSuffix(c.name, "(unchanged)") && !o.accepted {
				baseRefusals[c.base] = o.message
			}
		}
		for i, c := range cases {
			u, o := results[i][0], results[i][1]
			if u.accepted {
				r.upAccepted++
			} else {
				r.upRejected++
			}
			if c.updateOf == "" && strings.HasSuffix(c.name, "(unchanged)") && !u.accepted {
				t.Fatalf("%s base %s: upstream's API server refused it: %s", k.kind, c.name, u.message)
			}
			d := disagreement{kind: k.kind, name: c.name, mutation: c.mutation, upstream: u.String(), ours: o.String()}
			switch {
			case u.accepted != o.accepted:
				msg, refused := baseRefusals[c.base]
				d.inherited = !o.accepted && !strings.HasSuffix(c.name, "(unchanged)") &&
					((refused && o.message == msg) || strings.HasPrefix(o.message, baseNotCreated))
				all = append(all, d)
			case u.accepted && !reflect.DeepEqual(u.object, o.object):
				diffs := diffObjects(nil, u.object, o.object)
				d.upstream = "accepted, returned " + strings.Join(side(diffs, 0), "; ")
				d.ours = "accepted, returned " + strings.Join(side(diffs, 1), "; ")
				all = append(all, d)
			default:
				r.equal++
			}
		}
		// Not vacuous: the cases must exercise both verdicts.
		if r.upAccepted < r.cases/20 || r.upRejected < r.cases/5 {
			t.Errorf("%s: upstream accepted %d and rejected %d of %d cases: the generator no longer exercises both verdicts", k.kind, r.upAccepted, r.upRejected, r.cases)
		}
		rows = append(rows, r)
	}

	report := formatReport(rows, all, time.Since(start))
	t.Log("\n" + report)
	if path := os.Getenv("CRDPARITY_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Errorf("writing %s: %v", path, err)
		}
	}
	perKind := map[string]int{}
	for _, d := range all {
		perKind[d.kind]++
	}
	for _, r := range rows {
		if n := perKind[r.kind]; n > 0 {
			t.Errorf("%s: %d disagreements with upstream (listed in the report above)", r.kind, n)
		}
	}
}

// run sends every case to both servers, concurrency cases at a time.
func run(ctx context.Context, k kindSpec, cases []testCase, up, ours *server) [][2]verdict {
	out := make([][2]verdict, len(cases))
	next := make(chan int)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i][0] = up.apply(ctx, k, cases[i])
				out[i][1] = ours.apply(ctx, k, cases[i])
			}
		}()
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// fieldDiff is one path where two objects differ, with both values.
type fieldDiff struct {
	path     string
	up, ours any
}

const absent = "(absent)"

func diffObjects(p path, a, b any) []fieldDiff {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []fieldDiff
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			av, ain := am[k]
			bv, bin := bm[k]
			switch {
			case !ain:
				out = append(out, fieldDiff{p.with(k).String(), absent, bv})
			case !bin:
				out = append(out, fieldDiff{p.with(k).String(), av, absent})
			default:
				out = append(out, diffObjects(p.with(k), av, bv)...)
			}
		}
		return out
	}
	al, alist := a.([]any)
	bl, blist := b.([]any)
	if alist && blist && len(al) == len(bl) {
		var out []fieldDiff
		for i := range al {
			out = append(out, diffObjects(p.with(i), al[i], bl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	return []fieldDiff{{p.String(), a, b}}
}

func side(diffs []fieldDiff, i int) []string {
	out := make([]string, 0, len(diffs))
	for _, d := range diffs {
		v := d.up
		if i == 1 {
			v = d.ours
		}
		if s, ok := v.(string); ok && s == absent {
			out = append(out, d.path+" absent")
		} else {
			out = append(out, d.path+"="+compact(v, 200))
		}
	}
	return out
}

func formatReport(rows []row, all []disagreement, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %6s %6s %9s %10s %10s %s\n", "kind", "cases", "equal", "differing", "agreement", "structure", "upstream accepted/rejected")
	total, equal := 0, 0
	for _, r := range rows {
		if r.missing != "" {
			fmt.Fprintf(&b, "%-16s %6d %6s %9s %10s %10d MISSING: %s\n", r.kind, r.cases, "-", "-", "-", r.structural, r.missing)
			total += r.cases
			continue
		}
		fmt.Fprintf(&b, "%-16s %6d %6d %9d %9.1f%% %10d %d/%d\n", r.kind, r.cases, r.equal, r.cases-r.equal, 100*float64(r.equal)/float64(max(r.cases, 1)), r.structural, r.upAccepted, r.upRejected)
		total += r.cases
		equal += r.equal
	}
	fmt.Fprintf(&b, "%-16s %6d %6d %9d %9.1f%% (cases of missing kinds count as differing) in %s\n", "all", total, equal, total-equal, 100*float64(equal)/float64(max(total, 1)), took.Round(time.Second))
	fmt.Fprintf(&b, "\ndisagreements by kind and field (not counting those that follow from a refused base):\n")
	groups := map[string]int{}
	for _, d := range all {
		if !d.inherited {
			groups[d.kind+" "+fieldOf(d)]++
		}
	}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		fmt.Fprintf(&b, "  %4d  %s\n", groups[g], g)
	}
	var own, inherited []disagreement
	for _, d := range all {
		if d.inherited {
			inherited = append(inherited, d)
		} else {
			own = append(own, d)
		}
	}
	fmt.Fprintf(&b, "\n%d disagreements (%d more, listed last, follow from ours refusing the unchanged base):\n", len(own), len(inherited))
	for _, d := range own {
		fmt.Fprintf(&b, "- %s | %s\n    mutation: %s\n    upstream: %s\n    ours:     %s\n", d.kind, d.name, d.mutation, d.upstream, d.ours)
	}
	fmt.Fprintf(&b, "\n%d disagreements where ours gives the error of the unchanged base (or could not create the base of an update):\n", len(inherited))
	for _, d := range inherited {
		fmt.Fprintf(&b, "- %s | %s\n    mutation: %s\n    upstream: %s\n    ours:     %s\n", d.kind, d.name, d.mutation, d.upstream, d.ours)
	}
	return b.String()
}

var (
	indexRE = regexp.MustCompile(`\[[0-9]+\]`)
	fieldRE = regexp.MustCompile(`^(?:dry-run update: )?(?:set|delete) (.+?)(?: = |; |$)`)
)

// fieldOf is the field a disagreement is about, list indexes dropped: the
// path its mutation sets or deletes first, or the structural part.
func fieldOf(d disagreement) string {
	if strings.HasPrefix(d.name, "structure: ") {
		return "(structure)"
	}
	if m := fieldRE.FindStringSubmatch(d.mutation); m != nil {
		f := indexRE.ReplaceAllString(m[1], "[]")
		if strings.HasPrefix(d.mutation, "dry-run update") {
			f = "update " + f
		}
		return f
	}
	return d.mutation
}
