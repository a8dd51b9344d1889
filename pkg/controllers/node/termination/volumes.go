package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReasonAwaitingVolumeDetachment is the event on a drained node whose
// volumes are still attached.
const ReasonAwaitingVolumeDetachment = "AwaitingVolumeDetachment"

// PendingVolumeAttachments returns the node's VolumeAttachments that the
// instance's termination waits for, so that a StatefulSet pod's volume can
// attach to its new node as soon as the old one lets go of it.
//
// Attachments of volumes used by pods that stay on the node until the end
// (mirror pods, pods tolerating the disrupted taint, pods stuck terminating)
// are not waited for: they would only detach once the instance is gone. Nor
// are attachments without a PersistentVolume (inline CSI volumes).
func PendingVolumeAttachments(ctx context.Context, c client.Client, node *corev1.Node, now time.Time) ([]*storagev1.VolumeAttachment, error) {
	list := &storagev1.VolumeAttachmentList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing volume attachments: %w", err)
	}
	var attached []*storagev1.VolumeAttachment
	for i := range list.Items {
		va := &list.Items[i]
		if va.Spec.NodeName == node.Name && va.Spec.Source.PersistentVolumeName != nil {
			attached = append(attached, va)
		}
	}
	if len(attached) == 0 {
		return nil, nil
	}
	pods, err := PodsOnNode(ctx, c, node.Name)
	if err != nil {
		return nil, err
	}
	staying := map[string]bool{}
	for _, p := range pods {
		if IsTerminal(p) || HoldsDrain(p, now) {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			pvc := &corev1.PersistentVolumeClaim{}
			err := c.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, pvc)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("getting persistent volume claim %s/%s: %w", p.Namespace, v.PersistentVolumeClaim.ClaimName, err)
			}
			if pvc.Spec.VolumeName != "" {
				staying[pvc.Spec.VolumeName] = true
			}
		}
	}
	var pending []*storagev1.VolumeAttachment
	for _, va := range attached {
		if !staying[*va.Spec.Source.PersistentVolumeName] {
			pending = append(pending, va)
		}
	}
	return pending, nil
}
