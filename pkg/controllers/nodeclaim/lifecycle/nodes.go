package lifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// ProviderIDIndex is the field index name for Node spec.providerID. When the
// client's cache has it (see IndexNodeProviderID), looking nodes up by provider
// ID does not copy every Node.
const ProviderIDIndex = "spec.providerID"

// IndexNodeProviderID registers ProviderIDIndex on a cache's field indexer.
func IndexNodeProviderID(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &corev1.Node{}, ProviderIDIndex, func(o client.Object) []string {
		id := o.(*corev1.Node).Spec.ProviderID
		if id == "" {
			return nil
		}
		return []string{id}
	})
}

// NodeClaimProviderIDIndex is the field index name for NodeClaim
// status.providerID, used to map Node events to NodeClaims without listing
// every NodeClaim.
const NodeClaimProviderIDIndex = "status.providerID"

// IndexNodeClaimProviderID registers NodeClaimProviderIDIndex on a cache's
// field indexer.
func IndexNodeClaimProviderID(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &v1.NodeClaim{}, NodeClaimProviderIDIndex, func(o client.Object) []string {
		id := o.(*v1.NodeClaim).Status.ProviderID
		if id == "" {
			return nil
		}
		return []string{id}
	})
}

// nodesForProviderID returns the Nodes with the provider ID. It uses the field
// index when the client has one and otherwise filters a full list (a direct
// API client cannot select Nodes by spec.providerID).
func nodesForProviderID(ctx context.Context, c client.Client, providerID string) ([]*corev1.Node, error) {
	if providerID == "" {
		return nil, nil
	}
	list := &corev1.NodeList{}
	if err := c.List(ctx, list, client.MatchingFields{ProviderIDIndex: providerID}); err != nil {
		if err := c.List(ctx, list); err != nil {
			return nil, err
		}
	}
	var out []*corev1.Node
	for i := range list.Items {
		if list.Items[i].Spec.ProviderID == providerID {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// nodeForNodeClaim returns the single Node of a launched NodeClaim, nil when
// none exists yet, or an error when several claim the same provider ID.
func nodeForNodeClaim(ctx context.Context, c client.Client, nc *v1.NodeClaim) (*corev1.Node, error) {
	nodes, err := nodesForProviderID(ctx, c, nc.Status.ProviderID)
	if err != nil {
		return nil, err
	}
	switch len(nodes) {
	case 0:
		return nil, nil
	case 1:
		return nodes[0], nil
	}
	return nil, &multipleNodesError{providerID: nc.Status.ProviderID, count: len(nodes)}
}

type multipleNodesError struct {
	providerID string
	count      int
}

func (e *multipleNodesError) Error() string {
	return fmt.Sprintf("%d nodes have providerID %s", e.count, e.providerID)
}

func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for i := range taints {
		if taints[i].MatchTaint(&t) {
			return true
		}
	}
	return false
}

func nodePoolOf(o client.Object) string { return o.GetLabels()[v1.NodePoolLabelKey] }

// DuplicateNodeClaimsError is the answer of NodeClaimForNode when several
// NodeClaims carry the node's provider ID; First is one of them.
type DuplicateNodeClaimsError struct {
	Node         string
	First, Other *v1.NodeClaim
}

func (e *DuplicateNodeClaimsError) Error() string {
	return fmt.Sprintf("node %s: NodeClaims %s and %s both have provider ID %s", e.Node, e.First.Name, e.Other.Name, e.First.Status.ProviderID)
}

// NodeClaimForNode is the NodeClaim of the node's provider ID: nil when there
// is none (or the node has no provider ID yet), a *DuplicateNodeClaimsError
// when several claim it. It uses NodeClaimProviderIDIndex when the reader has
// it and otherwise filters a full list (a direct API client).
func NodeClaimForNode(ctx context.Context, c client.Reader, node *corev1.Node) (*v1.NodeClaim, error) {
	if node.Spec.ProviderID == "" {
		return nil, nil
	}
	list := &v1.NodeClaimList{}
	if err := c.List(ctx, list, client.MatchingFields{NodeClaimProviderIDIndex: node.Spec.ProviderID}); err != nil {
		if err := c.List(ctx, list); err != nil {
			return nil, err
		}
	}
	var found *v1.NodeClaim
	for i := range list.Items {
		if list.Items[i].Status.ProviderID != node.Spec.ProviderID {
			continue
		}
		if found != nil {
			return nil, &DuplicateNodeClaimsError{Node: node.Name, First: found, Other: &list.Items[i]}
		}
		found = &list.Items[i]
	}
	return found, nil
}
