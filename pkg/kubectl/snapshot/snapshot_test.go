package snapshot_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
)

const yamlDump = `apiVersion: v1
kind: List
items:
- apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: default}
  spec:
    template:
      spec:
        nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
        requirements: []
- apiVersion: v1
  kind: Pod
  metadata: {name: fresh, namespace: default}
  spec:
    containers: [{name: c, image: x}]
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: ignored, namespace: default}
`

const jsonDump = `{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
  "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"}, "requirements": []}}}},
 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fresh", "namespace": "default"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ignored", "namespace": "default"}}
]}`

// Both dump formats give the same snapshot; a pod the scheduler has not
// looked at yet counts as pending; kinds the planner does not read are skipped.
func TestFromDumpYAMLAndJSON(t *testing.T) {
	for name, text := range map[string]string{"dump.yaml": yamlDump, "dump.json": jsonDump} {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := snapshot.FromDump(path, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := s.Counts(); got != "1 nodepools, 0 nodeclaims, 0 nodes, 1 pods" {
			t.Errorf("%s: %s", name, got)
		}
		pods := &corev1.PodList{}
		if err := s.Store.List(context.Background(), pods); err != nil || len(pods.Items) != 1 {
			t.Fatalf("%s: list: %v %d", name, err, len(pods.Items))
		}
		c := pods.Items[0].Status.Conditions
		if len(c) != 1 || c[0].Reason != corev1.PodReasonUnschedulable {
			t.Errorf("%s: conditions %+v", name, c)
		}
	}
}

func TestStoreRefusesWrites(t *testing.T) {
	s := snapshot.New("test")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	ctx := context.Background()
	for _, err := range []error{s.Store.Create(ctx, pod), s.Store.Update(ctx, pod), s.Store.Delete(ctx, pod), s.Store.Status().Update(ctx, pod)} {
		if !errors.Is(err, snapshot.ErrReadOnly) {
			t.Errorf("write: err = %v", err)
		}
	}
}
