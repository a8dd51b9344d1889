package filters

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
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

func TestResolveMergesByIDAndNamesUnmatchedAndFailedTerms(t *testing.T) {
	type r struct{ id string }
	qs := []Query{
		{Filters: []ec2types.Filter{{Name: aws.String("id"), Values: []string{"a", "b"}}}, Terms: []int{0, 2}},
		{Filters: []ec2types.Filter{{Name: aws.String("tag:x"), Values: []string{"1"}}}, Terms: []int{1}},
	}
	answers := map[string][]r{"id": {{"a"}}, "tag:x": {{"a"}, {"c"}}}
	describe := func(fs []ec2types.Filter) ([]r, error) { return answers[aws.ToString(fs[0].Name)], nil }
	wanted := map[int]string{0: "a", 2: "b"}
	all, unmatched, err := Resolve(qs, 3, "things", "thingTerms", describe, func(x r) string { return x.id },
		func(i int, found []r) bool {
			if want, ok := wanted[i]; ok {
				for _, f := range found {
					if f.id == want {
						return true
					}
				}
				return false
			}
			return len(found) > 0
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Errorf("want a and c once each, got %v", all)
	}
	if len(unmatched) != 1 || unmatched[0] != 2 {
		t.Errorf("unmatched = %v, want [2]", unmatched)
	}
	_, _, err = Resolve(qs, 3, "things", "thingTerms", func([]ec2types.Filter) ([]r, error) { return nil, errors.New("boom") },
		func(x r) string { return x.id }, func(int, []r) bool { return true })
	if err == nil || err.Error() != "describing things for thingTerms[0], thingTerms[2]: boom" {
		t.Errorf("error = %v", err)
	}
}

func TestTermAndUnmatchedMessages(t *testing.T) {
	if got := (Term{}).Field("id", "").Tags(nil).String(); got != "empty term" {
		t.Errorf("a term with nothing set: %q", got)
	}
	got := Term{}.Field("id", "sg-1").Tags(map[string]string{"b": "2", "a": "1"}).Field("owner", "self").String()
	if want := `id "sg-1", tags {"a":"1","b":"2"}, owner "self"`; got != want {
		t.Errorf("term: %q, want %q", got, want)
	}
	msg := Unmatched("subnetSelectorTerms", "subnet", []int{0, 2}, func(i int) string { return fmt.Sprintf("term %d", i) })
	if want := "subnetSelectorTerms[0] matched no subnet: term 0; subnetSelectorTerms[2] matched no subnet: term 2"; msg != want {
		t.Errorf("unmatched: %q, want %q", msg, want)
	}
	if msg := Unmatched("subnetSelectorTerms", "subnet", nil, nil); msg != "" {
		t.Errorf("all matched: %q, want empty", msg)
	}
}
