package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

const committedPage = "../../../docs/aws-instance-types.md"

func generate(t *testing.T) []byte {
	t.Helper()
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	cfg := em.AWSConfig()
	page, err := Generate(context.Background(), cfg, em.Options().ClusterName)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// The committed page is what the provider computes today.
func TestCommittedPageIsUpToDate(t *testing.T) {
	page := generate(t)
	committed, err := os.ReadFile(committedPage)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(page, committed) {
		return
	}
	got, want := strings.Split(string(page), "\n"), strings.Split(string(committed), "\n")
	for i := 0; i < len(got) && i < len(want); i++ {
		if got[i] != want[i] {
			t.Fatalf("docs/aws-instance-types.md is stale (run go run ./hack/docs/instancetypes): line %d is %q, the provider now gives %q", i+1, want[i], got[i])
		}
	}
	t.Fatalf("docs/aws-instance-types.md is stale (run go run ./hack/docs/instancetypes): %d lines committed, %d generated", len(want), len(got))
}

// The page lists every type once, with the figures the capacity math gives
// (m5.large: worked out in pkg/providers/aws/instancetype/capacity_test.go).
func TestPageContent(t *testing.T) {
	page := string(generate(t))
	if n := strings.Count(page, "\n### `"); n != 1363 {
		t.Errorf("%d instance type sections, want 1,363", n)
	}
	section := page[strings.Index(page, "### `m5.large`"):]
	section = section[:strings.Index(section, "\n### `")+1]
	for _, line := range []string{
		" |karpenter.k8s.aws/instance-family|m5|",
		" |kubernetes.io/arch|amd64|",
		" |node.kubernetes.io/instance-type|m5.large|",
		" |cpu|1930m|",
		" |ephemeral-storage|17Gi|",
		" |memory|6903Mi|",
		" |pods|29|",
		" |vpc.amazonaws.com/pod-eni|9|",
	} {
		if !strings.Contains(section, line+"\n") {
			t.Errorf("m5.large section lacks %q:\n%s", line, section)
		}
	}
	for _, hidden := range []string{"topology.kubernetes.io/zone|", "karpenter.sh/capacity-type|", "topology.k8s.aws/zone-id|"} {
		if strings.Contains(section, hidden) {
			t.Errorf("m5.large section shows %s, which depends on the subnets, not the type", hidden)
		}
	}
}
