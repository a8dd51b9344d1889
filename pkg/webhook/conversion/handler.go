package conversion

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	awsv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1beta1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/convert"
)

// maxReviewBytes bounds a request body; the apiserver sends at most a list's worth.
const maxReviewBytes = 64 << 20

// converter translates one object (as JSON) between two versions of a kind.
type converter func(raw []byte, to string) (runtime.Object, error)

// converters is keyed by group and kind.
var converters = map[schema.GroupKind]converter{
	{Group: v1.Group, Kind: "NodePool"}:        convertNodePool,
	{Group: v1.Group, Kind: "NodeClaim"}:       convertNodeClaim,
	{Group: awsv1.Group, Kind: "EC2NodeClass"}: convertEC2NodeClass,
}

// Handler answers apiextensions.k8s.io/v1 ConversionReviews.
type Handler struct{}

func (Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a ConversionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	review := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(body, review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not a ConversionReview: %v", err), http.StatusBadRequest)
		return
	}
	resp := Review(review.Request)
	out := &apiextensionsv1.ConversionReview{TypeMeta: review.TypeMeta, Response: resp}
	if out.APIVersion == "" {
		out.APIVersion, out.Kind = "apiextensions.k8s.io/v1", "ConversionReview"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// Review converts every object of req; one failure fails the whole review,
// as the apiserver requires.
func Review(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID}
	for i, obj := range req.Objects {
		converted, err := Convert(obj.Raw, req.DesiredAPIVersion)
		if err != nil {
			resp.ConvertedObjects = nil
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: fmt.Sprintf("object %d: %v", i, err)}
			return resp
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: converted})
	}
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	return resp
}

// Convert translates one serialized object to the desired apiVersion.
func Convert(raw []byte, desiredAPIVersion string) ([]byte, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, err
	}
	from, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return nil, err
	}
	to, err := schema.ParseGroupVersion(desiredAPIVersion)
	if err != nil {
		return nil, err
	}
	if from.Group != to.Group {
		return nil, fmt.Errorf("cannot convert %s to %s: different groups", tm.APIVersion, desiredAPIVersion)
	}
	if from.Version == to.Version {
		return raw, nil
	}
	conv, ok := converters[schema.GroupKind{Group: from.Group, Kind: tm.Kind}]
	if !ok {
		return nil, fmt.Errorf("no conversion for %s %s", tm.APIVersion, tm.Kind)
	}
	out, err := conv(raw, to.Version)
	if err != nil {
		return nil, fmt.Errorf("converting %s %s to %s: %w", tm.APIVersion, tm.Kind, desiredAPIVersion, err)
	}
	return json.Marshal(out)
}

// twoWay builds a converter between a kind's v1beta1 and v1 Go types.
func twoWay[B, V any](toV1 func(*B) (*V, error), toV1beta1 func(*V) (*B, error)) converter {
	return func(raw []byte, to string) (runtime.Object, error) {
		switch to {
		case "v1":
			in := new(B)
			if err := json.Unmarshal(raw, in); err != nil {
				return nil, err
			}
			out, err := toV1(in)
			if err != nil {
				return nil, err
			}
			return any(out).(runtime.Object), nil
		case "v1beta1":
			in := new(V)
			if err := json.Unmarshal(raw, in); err != nil {
				return nil, err
			}
			out, err := toV1beta1(in)
			if err != nil {
				return nil, err
			}
			return any(out).(runtime.Object), nil
		}
		return nil, fmt.Errorf("unsupported version %s", to)
	}
}

var (
	convertNodePool     = twoWay(convert.NodePoolV1beta1ToV1, convert.NodePoolV1ToV1beta1)
	convertNodeClaim    = twoWay(convert.NodeClaimV1beta1ToV1, convert.NodeClaimV1ToV1beta1)
	convertEC2NodeClass = twoWay[awsv1beta1.EC2NodeClass, awsv1.EC2NodeClass](convert.EC2NodeClassV1beta1ToV1, convert.EC2NodeClassV1ToV1beta1)
)
