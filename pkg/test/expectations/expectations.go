// Package expectations holds small test helpers over a real client (an envtest
// API server): apply objects including their status, reconcile, and assert that
// objects exist or are gone. Every helper fails the test through t, so tests read
// as a sequence of steps.
package expectations

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"
)

// ExpectApplied creates each object, or updates it when it exists, and then
// writes its status too (the API server drops status on create and on a main
// resource update for kinds with a status subresource). On return each object
// holds what the server stored.
func ExpectApplied(ctx context.Context, t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		desired := o.DeepCopyObject().(client.Object)
		current := o.DeepCopyObject().(client.Object)
		err := c.Get(ctx, client.ObjectKeyFromObject(o), current)
		switch {
		case apierrors.IsNotFound(err):
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("creating %s: %v", describe(o), err)
			}
		case err != nil:
			t.Fatalf("getting %s: %v", describe(o), err)
		default:
			o.SetResourceVersion(current.GetResourceVersion())
			if err := c.Update(ctx, o); err != nil {
				t.Fatalf("updating %s: %v", describe(o), err)
			}
		}
		// Write the status we were given. Kinds without a status subresource
		// answer NotFound here, and their status (if any) was stored already.
		// A controller running beside the test may write the object between
		// the two writes (a finalizer, its own status): the given status is
		// written again over the newer version.
		rv := o.GetResourceVersion()
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			desired.SetResourceVersion(rv)
			err := c.Status().Update(ctx, desired)
			if apierrors.IsConflict(err) {
				latest := o.DeepCopyObject().(client.Object)
				if getErr := c.Get(ctx, client.ObjectKeyFromObject(o), latest); getErr != nil {
					return getErr
				}
				rv = latest.GetResourceVersion()
			}
			return err
		})
		if err == nil {
			o.SetResourceVersion(desired.GetResourceVersion())
		} else if !apierrors.IsNotFound(err) {
			t.Fatalf("updating status of %s: %v", describe(o), err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatalf("reading back %s: %v", describe(o), err)
		}
	}
}

// ExpectStatusUpdated writes only the status of each object.
func ExpectStatusUpdated(ctx context.Context, t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Status().Update(ctx, o); err != nil {
			t.Fatalf("updating status of %s: %v", describe(o), err)
		}
	}
}

// ExpectExists reads obj from the server (by its name and namespace) into obj
// and returns it, failing the test when it does not exist.
func ExpectExists[T client.Object](ctx context.Context, t testing.TB, c client.Client, obj T) T {
	t.Helper()
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("expected %s to exist: %v", describe(obj), err)
	}
	return obj
}

// ExpectNotFound fails the test unless every object is gone from the server.
func ExpectNotFound(ctx context.Context, t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		cp := o.DeepCopyObject().(client.Object)
		err := c.Get(ctx, client.ObjectKeyFromObject(o), cp)
		if err == nil {
			t.Fatalf("expected %s to be gone, it exists (deletionTimestamp %v, finalizers %v)", describe(o), cp.GetDeletionTimestamp(), cp.GetFinalizers())
		}
		if !apierrors.IsNotFound(err) {
			t.Fatalf("getting %s: %v", describe(o), err)
		}
	}
}

// ExpectDeleted deletes each object (ignoring ones already gone) without
// waiting for finalizers.
func ExpectDeleted(ctx context.Context, t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting %s: %v", describe(o), err)
		}
	}
}

// ExpectFinalizersRemoved strips every finalizer from each object that still
// exists, so that a deleted object really goes away.
func ExpectFinalizersRemoved(ctx context.Context, t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		cur := o.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			t.Fatalf("getting %s: %v", describe(o), err)
		}
		patch := client.MergeFrom(cur.DeepCopyObject().(client.Object))
		cur.SetFinalizers(nil)
		if err := c.Patch(ctx, cur, patch); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("removing finalizers of %s: %v", describe(o), err)
		}
	}
}

// ExpectCleanedUp deletes every object of the listed kinds (e.g.
// &v1.NodeClaimList{}), strips finalizers and waits until all are gone, so
// tests sharing one API server start from an empty slate.
func ExpectCleanedUp(ctx context.Context, t testing.TB, c client.Client, lists ...client.ObjectList) {
	t.Helper()
	for _, l := range lists {
		Eventually(t, 30*time.Second, func() error {
			if err := c.List(ctx, l); err != nil {
				return err
			}
			items, err := meta.ExtractList(l)
			if err != nil {
				return err
			}
			for _, it := range items {
				o := it.(client.Object)
				if len(o.GetFinalizers()) > 0 {
					patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
					o.SetFinalizers(nil)
					if err := c.Patch(ctx, o, patch); err != nil && !apierrors.IsNotFound(err) {
						return err
					}
				}
				if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
			if len(items) > 0 {
				return fmt.Errorf("%d %T items still present", len(items), l)
			}
			return nil
		})
	}
}

// ExpectReconciled runs one reconcile of obj and fails the test on error.
func ExpectReconciled(ctx context.Context, t testing.TB, r reconcile.Reconciler, obj client.Object) reconcile.Result {
	t.Helper()
	res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	if err != nil {
		t.Fatalf("reconciling %s: %v", describe(obj), err)
	}
	return res
}

// ExpectReconcileFailed runs one reconcile of obj and returns its error,
// failing the test when there is none.
func ExpectReconcileFailed(ctx context.Context, t testing.TB, r reconcile.Reconciler, obj client.Object) error {
	t.Helper()
	_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	if err == nil {
		t.Fatalf("expected reconciling %s to fail", describe(obj))
	}
	return err
}

// Eventually polls f every 10ms until it returns nil, failing the test with
// f's last error after timeout. Use it for things another goroutine or the API
// server completes (a delayed node write, garbage collection of dependents),
// never to wait out a clock: tests step fake clocks instead.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %v", timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func describe(o client.Object) string {
	kind := o.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = reflect.TypeOf(o).Elem().Name()
	}
	if o.GetNamespace() != "" {
		return fmt.Sprintf("%s %s/%s", kind, o.GetNamespace(), o.GetName())
	}
	return fmt.Sprintf("%s %s", kind, o.GetName())
}

// ExpectYAMLFile reads a YAML document (a Helm values file, say) into a generic map,
// failing the test naming the file when it cannot.
func ExpectYAMLFile(t testing.TB, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}
