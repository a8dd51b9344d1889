package v1

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// blockDeviceFields is BlockDevice without its JSON methods.
type blockDeviceFields BlockDevice

// UnmarshalJSON decodes a BlockDevice; a volumeSize that is not a quantity
// goes to InvalidVolumeSize instead of failing the whole object.
func (in *BlockDevice) UnmarshalJSON(data []byte) error {
	var raw struct {
		VolumeSize json.RawMessage `json:"volumeSize,omitempty"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	var size *resource.Quantity
	invalid := ""
	if len(raw.VolumeSize) > 0 && string(raw.VolumeSize) != "null" {
		var s string
		if json.Unmarshal(raw.VolumeSize, &s) != nil {
			s = string(raw.VolumeSize)
		}
		// A unit without a number ("Ti") parses as zero; it is no size.
		q := &resource.Quantity{}
		if err := json.Unmarshal(raw.VolumeSize, q); err == nil && strings.ContainsAny(s, "0123456789") {
			size = q
		} else {
			invalid = s
		}
	}
	// Decode the rest with the size taken out.
	var rest map[string]json.RawMessage
	if err := json.Unmarshal(data, &rest); err != nil {
		return err
	}
	delete(rest, "volumeSize")
	stripped, err := json.Marshal(rest)
	if err != nil {
		return err
	}
	var f blockDeviceFields
	if err := json.Unmarshal(stripped, &f); err != nil {
		return err
	}
	f.VolumeSize, f.InvalidVolumeSize = size, invalid
	*in = BlockDevice(f)
	return nil
}

// MarshalJSON encodes a BlockDevice, writing an InvalidVolumeSize back as
// it was stored.
func (in BlockDevice) MarshalJSON() ([]byte, error) {
	if in.InvalidVolumeSize == "" || in.VolumeSize != nil {
		return json.Marshal(blockDeviceFields(in))
	}
	type withSize struct {
		blockDeviceFields
		VolumeSize string `json:"volumeSize"`
	}
	return json.Marshal(withSize{blockDeviceFields: blockDeviceFields(in), VolumeSize: in.InvalidVolumeSize})
}
