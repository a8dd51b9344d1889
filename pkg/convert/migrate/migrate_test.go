package migrate

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestFormatSeconds(t *testing.T) {
	for n, want := range map[int64]string{0: "0s", 30: "30s", 90: "1m30s", 3600: "1h", 2592000: "720h", 3661: "1h1m1s"} {
		if got := formatSeconds(n); got != want {
			t.Errorf("formatSeconds(%d) = %q, want %q", n, got, want)
		}
	}
	if _, err := secondsDuration(-1, "spec.ttl"); err == nil || !strings.Contains(err.Error(), "spec.ttl") {
		t.Errorf("negative TTL: err = %v, want an error naming the field", err)
	}
	if _, err := secondsDuration(1<<62, "spec.ttl"); err == nil {
		t.Error("TTL overflowing time.Duration accepted")
	}
}

// TestExpandTagSelectorOrder pins the term order: keys sorted, the last key
// varying fastest, values in the order written.
func TestExpandTagSelectorOrder(t *testing.T) {
	var notes []string
	terms, err := expandTagSelector(map[string]string{"b": "b1, b2", "a": "a2,a1"}, "sel", "subnet-", func(s string) { notes = append(notes, s) })
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]string
	for _, term := range terms {
		got = append(got, term.tags)
	}
	want := []map[string]string{{"a": "a2", "b": "b1"}, {"a": "a2", "b": "b2"}, {"a": "a1", "b": "b1"}, {"a": "a1", "b": "b2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("terms = %v, want %v", got, want)
	}
	if len(notes) != 0 {
		t.Errorf("unexpected notes %v", notes)
	}
}

func TestExpandSelectorLimits(t *testing.T) {
	warn := func(string) {}
	var values []string
	for i := range 31 {
		values = append(values, fmt.Sprintf("v%d", i))
	}
	many := strings.Join(values, ",")
	if _, err := expandTagSelector(map[string]string{"k": many}, "sel", "sg-", warn); err == nil || !strings.Contains(err.Error(), "30") {
		t.Errorf("31 alternatives: err = %v, want the 30-term limit", err)
	}
	if _, err := expandTagSelector(map[string]string{"k": " , "}, "sel", "sg-", warn); err == nil {
		t.Error("a value of only commas was accepted")
	}
	if _, err := expandAMISelector(map[string]string{"aws::owners": "amazon"}, "sel", warn); err == nil {
		t.Error("an AMI selector with only owners was accepted; v1 rejects such a term")
	}
	terms, err := expandAMISelector(map[string]string{"aws::owners": "o1,o2", "aws::name": "n1,n2"}, "sel", warn)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, term := range terms {
		got = append(got, term.Owner+"/"+term.Name)
	}
	if want := []string{"o1/n1", "o1/n2", "o2/n1", "o2/n2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("AMI terms = %v, want %v (owners outermost)", got, want)
	}
}

func TestSplitNameUniqueAndShort(t *testing.T) {
	taken := map[string]bool{"default-a": true}
	if got := splitName("default", "a", taken); got != "default-a-2" {
		t.Errorf("splitName with the name taken = %q, want default-a-2", got)
	}
	long := splitName(strings.Repeat("c", 200), strings.Repeat("p", 200), map[string]bool{})
	if len(long) > 253 {
		t.Errorf("split name is %d characters, longer than a Kubernetes name may be", len(long))
	}
}

func TestFieldPath(t *testing.T) {
	if got := fieldPath([]string{"spec", "template", "metadata", "annotations", "karpenter.sh/do-not-evict"}); got != "spec.template.metadata.annotations[karpenter.sh/do-not-evict]" {
		t.Errorf("fieldPath = %q", got)
	}
	if got := fieldPath([]string{"spec", "containers[0]", "env[1]"}); got != "spec.containers[0].env[1]" {
		t.Errorf("fieldPath = %q", got)
	}
}

// TestConvertCollectsAllErrors: one run reports every failing object and
// returns no result, so nothing half-converted can be printed.
func TestConvertCollectsAllErrors(t *testing.T) {
	docs, err := ReadDocuments(strings.NewReader(`
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: one}
spec: {launchTemplate: lt, subnetSelector: {a: b}}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: two}
spec: {launchTemplate: lt, subnetSelector: {a: b}}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: fine}
spec: {subnetSelector: {a: b}, securityGroupSelector: {a: b}}
`), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Convert(docs, Options{})
	var errs Errors
	if res != nil || !errors.As(err, &errs) || len(errs) != 2 {
		t.Fatalf("Convert = %v, %v; want no result and 2 errors", res, err)
	}
	for i, name := range []string{`"one"`, `"two"`} {
		if !strings.Contains(errs[i].Error(), name) || !strings.Contains(errs[i].Error(), "x.yaml, document") {
			t.Errorf("error %d = %v, want it to name %s and its document", i, errs[i], name)
		}
	}
}

// Report tables fit a 100-column terminal, long field paths included.
func TestReportTableFits100Columns(t *testing.T) {
	long := "spec.jobTemplate.spec.template.spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector.matchExpressions[0].key"
	f := Finding{Rule: RuleProvisionerLabel, Kind: "CronJob", Name: "report", Namespace: "shop", Source: "manifests.yaml, document 4 (line 40)",
		Field: long, Change: changeProvisionerLabel, Action: actionProvisionerLabel}
	var b strings.Builder
	if err := WriteReport(&b, []Finding{f, f}, "table"); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if len(line) > reportWidth {
			t.Errorf("line of %d columns:\n%s", len(line), line)
		}
	}
	if !strings.Contains(strings.ReplaceAll(strings.ReplaceAll(b.String(), "\n", ""), " ", ""), long) {
		t.Errorf("the field path does not survive wrapping:\n%s", b.String())
	}
}
