package main

import (
	"bytes"
	"strings"
	"testing"
)

const seedValues = "../../pkg/convert/values/testdata/v0.30.yaml"

func TestValuesSubcommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"values", "-f", seedValues}, nil, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"clusterName: atlas-eks-dev-1-28-cluster", "interruptionQueue: karpenter-atlas-eks-dev-1-28-cluster", "DISABLE_LEADER_ELECTION"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "\n  aws:") || strings.Contains(out.String(), "defaultInstanceProfile") {
		t.Errorf("old keys left in the output:\n%s", out.String())
	}
	if !strings.Contains(errOut.String(), "note: settings.aws.defaultInstanceProfile: removed in v1") {
		t.Errorf("no note for defaultInstanceProfile:\n%s", errOut.String())
	}
	// v1 values: nothing to do.
	out.Reset()
	errOut.Reset()
	if code := run([]string{"values", "-f", "-"}, strings.NewReader("settings:\n  clusterName: x\n"), &out, &errOut); code != exitNothingToDo {
		t.Errorf("v1 values: exit %d, want %d (%s)", code, exitNothingToDo, errOut.String())
	}
	if code := run([]string{"values"}, nil, &out, &errOut); code != exitUsage {
		t.Errorf("no -f: exit %d, want %d", code, exitUsage)
	}
}

func TestReportFlagsOldValues(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"report", "-f", seedValues, "-o", "json"}, nil, &out, &errOut); code != exitFindings {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{`"rule": "helm-values"`, `"field": "settings.aws.clusterName"`, `"field": "settings.aws.defaultInstanceProfile"`, `"kind": "HelmValues"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %s:\n%s", want, out.String())
		}
	}
	release := `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: karpenter, namespace: karpenter}
spec:
  chart: {spec: {chart: karpenter}}
  values:
    webhook: {enabled: false}
    settings:
      aws: {clusterName: prod, interruptionQueueName: q}
`
	out.Reset()
	if code := run([]string{"report", "-f", "-", "-o", "json"}, strings.NewReader(release), &out, &errOut); code != exitFindings {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{`"field": "spec.values.settings.aws.clusterName"`, `"field": "spec.values.settings.aws.interruptionQueueName"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report on a HelmRelease lacks %s:\n%s", want, out.String())
		}
	}
}
