package e2e_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"
)

// serverTime is the API server's own record of one request (its audit
// event): when it received the request, when it had written the response,
// and for a slow request the latency breakdown it annotates
// (apiserver.latency.k8s.io/<step>: authentication, apf-queue-wait,
// etcd, serialize-response-object, response-write, total, ...).
type serverTime struct {
	received, done time.Time
	latency        map[string]string
}

// readAudit reads the NodeClaim creates of an audit log (see
// localcluster.Options.AuditNodeClaims) by the name of the NodeClaim created.
// A cluster without an audit log has none.
func readAudit(path string) (map[string]serverTime, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return parseAudit(f)
}

func parseAudit(r io.Reader) (map[string]serverTime, error) {
	out := map[string]serverTime{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Verb      string    `json:"verb"`
			Stage     string    `json:"stage"`
			Received  time.Time `json:"requestReceivedTimestamp"`
			Done      time.Time `json:"stageTimestamp"`
			ObjectRef struct {
				Resource string `json:"resource"`
			} `json:"objectRef"`
			Response struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			} `json:"responseObject"`
			Annotations map[string]string `json:"annotations"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, err
		}
		if ev.Verb != "create" || ev.Stage != "ResponseComplete" || ev.ObjectRef.Resource != "nodeclaims" || ev.Response.Metadata.Name == "" {
			continue
		}
		st := serverTime{received: ev.Received, done: ev.Done}
		for k, v := range ev.Annotations {
			if step, ok := strings.CutPrefix(k, "apiserver.latency.k8s.io/"); ok {
				if st.latency == nil {
					st.latency = map[string]string{}
				}
				st.latency[step] = v
			}
		}
		out[ev.Response.Metadata.Name] = st
	}
	return out, sc.Err()
}

// createSplit divides what a create's caller waited (from start to end, the
// Karpenter log's api-duration ending at the log line) into the time before
// the API server received it (Karpenter's client, the connection, and the
// API server reading the request), the server's own time, and the time from
// the server's last write to the caller's return.
func createSplit(start, end time.Time, st serverTime) (toServer, inServer, back time.Duration) {
	return st.received.Sub(start), st.done.Sub(st.received), end.Sub(st.done)
}

// latencySteps renders a server latency breakdown, largest first.
func latencySteps(m map[string]string) string {
	type step struct {
		name string
		d    time.Duration
	}
	var steps []step
	for k, v := range m {
		if d, err := time.ParseDuration(v); err == nil && k != "total" && d >= time.Millisecond {
			steps = append(steps, step{k, d})
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].d > steps[j].d })
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = s.name + " " + s.d.Round(time.Millisecond).String()
	}
	return strings.Join(parts, ", ")
}
