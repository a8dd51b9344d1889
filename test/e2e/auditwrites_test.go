package e2e_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"strings"
)

// claimWrites counts the writes to NodeClaims an audit log recorded (see
// localcluster.Options.AuditNodeClaims), by kind: "create", "metadata patch",
// "status apply <field manager>" and "status merge patch" (podevents'
// lastPodEventTime, and the conditional writes of termination and
// disruption), over the NodeClaims created.
type claimWrites struct {
	byKind map[string]int
	claims int
}

func readClaimWrites(path string) (claimWrites, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return claimWrites{}, nil
	}
	if err != nil {
		return claimWrites{}, err
	}
	defer func() { _ = f.Close() }()
	return parseClaimWrites(f)
}

func parseClaimWrites(r io.Reader) (claimWrites, error) {
	out := claimWrites{byKind: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Verb       string `json:"verb"`
			Stage      string `json:"stage"`
			RequestURI string `json:"requestURI"`
			ObjectRef  struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return claimWrites{}, err
		}
		if ev.Stage != "ResponseComplete" || ev.ObjectRef.Resource != "nodeclaims" {
			continue
		}
		var kind string
		switch {
		case ev.Verb == "create" && ev.ObjectRef.Subresource == "":
			kind = "create"
			out.claims++
		case ev.Verb != "patch" && ev.Verb != "update":
			continue
		case ev.ObjectRef.Subresource == "":
			kind = "metadata " + ev.Verb
		case ev.ObjectRef.Subresource == "status":
			kind = "status merge " + ev.Verb
			// An apply names its field manager in the query (force=true as well).
			if u, err := url.Parse(ev.RequestURI); err == nil && u.Query().Get("force") != "" {
				kind = "status apply " + u.Query().Get("fieldManager")
			}
		default:
			kind = ev.ObjectRef.Subresource + " " + ev.Verb
		}
		out.byKind[kind]++
	}
	return out, sc.Err()
}

// statusPerClaim is the number of status writes per NodeClaim created.
func (w claimWrites) statusPerClaim() float64 {
	n := 0
	for k, v := range w.byKind {
		if strings.HasPrefix(k, "status ") {
			n += v
		}
	}
	if w.claims == 0 {
		return 0
	}
	return float64(n) / float64(w.claims)
}

func (w claimWrites) String() string {
	if w.claims == 0 {
		return "no NodeClaim created (or no audit log)"
	}
	kinds := make([]string, 0, len(w.byKind))
	for k := range w.byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d (%.2f)", k, w.byKind[k], float64(w.byKind[k])/float64(w.claims))
	}
	return fmt.Sprintf("%d NodeClaims, %.2f status writes each; %s", w.claims, w.statusPerClaim(), strings.Join(parts, "; "))
}
