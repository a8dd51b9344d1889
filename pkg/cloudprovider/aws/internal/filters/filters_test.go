package filters

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestTags(t *testing.T) {
	fs := Tags(map[string]string{"b": "*", "a": "x", "Name": "n"})
	var got []string
	for _, f := range fs {
		got = append(got, aws.ToString(f.Name)+"="+f.Values[0])
	}
	want := []string{"tag:Name=n", "tag:a=x", "tag-key=b"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("filter %d = %s, want %s", i, got[i], want[i])
		}
	}
	if Key(fs) != Key(Tags(map[string]string{"a": "x", "Name": "n", "b": "*"})) {
		t.Error("equal terms must give equal keys")
	}
	if Key(fs, "self") == Key(fs, "amazon") {
		t.Error("extras must change the key")
	}
	if d := DescribeTags(map[string]string{"z": "1", "a": "*"}); d != `{"a":"*","z":"1"}` {
		t.Errorf("DescribeTags = %s", d)
	}
}
