package plan

import (
	"context"
	"fmt"

	"k8s.io/utils/clock"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/kwok"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
)

// CloudProvider picks the provider the snapshot's NodePools use, by their
// nodeClassRef kinds, and returns it in planning form: KWOK's catalog
// in-process (INSTANCE_TYPES_FILE_PATH as the controller reads it). AWS
// NodePools are refused with a clear message: their instance types need the
// provider's EC2 calls, which the planner does not make yet.
func CloudProvider(ctx context.Context, snap *snapshot.Snapshot, clk clock.Clock) (cloudprovider.CloudProvider, error) {
	for _, np := range snapshot.All[*v1.NodePool](snap) {
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Group == awsv1.SchemeGroupVersion.Group {
			return nil, fmt.Errorf("nodepool %s uses %s %s: planning with AWS instance types is not supported yet (KWOK only)", np.Name, ref.Kind, ref.Name)
		}
	}
	catalog, err := kwok.LoadInstanceTypesFromEnv()
	if err != nil {
		return nil, err
	}
	// The provider's kube client is only used by Create/Delete/Get/List, which
	// the planner never calls; the snapshot's read-only store stands in.
	return kwok.New(ctx, snap.Store, clk, catalog), nil
}
