package lifecycle

import "k8s.io/apimachinery/pkg/runtime"

// Event reasons, as upstream Karpenter emits them.
const (
	ReasonInsufficientCapacity     = "InsufficientCapacityError"
	ReasonUnregisteredTaintMissing = "UnregisteredTaintMissing"
	ReasonLaunchFailed             = "FailedLaunch"
)

// nopRecorder drops events when no recorder is wired (e.g. in benchmarks).
type nopRecorder struct{}

func (nopRecorder) Event(runtime.Object, string, string, string)                  {}
func (nopRecorder) Eventf(runtime.Object, string, string, string, ...interface{}) {}
func (nopRecorder) AnnotatedEventf(runtime.Object, map[string]string, string, string, string, ...interface{}) {
}
