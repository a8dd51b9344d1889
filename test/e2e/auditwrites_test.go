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
// "status apply <field manager>" and "status merge patch <field manager>"
// (podevents' lastPodEventTime, and the conditional writes of termination and
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
			// An apply names its field manager in the query (force=true as
			// well); so do Karpenter's merge patches and updates, to be
			// told apart here (ownedconditions' managers).
			if u, err := url.Parse(ev.RequestURI); err == nil {
				switch q := u.Query(); {
				case q.Get("force") != "":
					kind = "status apply " + q.Get("fieldManager")
				case q.Get("fieldManager") != "":
					kind += " " + q.Get("fieldManager")
				}
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

// since is w less the writes already in before (the same log read earlier):
// the writes of one phase. Its claims are those created in the phase, or,
// when none were, those created before (a phase that only rewrites them).
func (w claimWrites) since(before claimWrites) claimWrites {
	out := claimWrites{byKind: map[string]int{}, claims: w.claims - before.claims}
	for k, v := range w.byKind {
		if d := v - before.byKind[k]; d > 0 {
			out.byKind[k] = d
		}
	}
	if out.claims == 0 {
		out.claims = before.claims
	}
	return out
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
