package awsemulator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// serveControl answers the unsigned control endpoint the binary's users drive:
//
//	POST   /_emulator/faults                 a Fault as JSON (Latency: "250ms" or nanoseconds)
//	DELETE /_emulator/faults                 clear every fault
//	GET    /_emulator/calls                  {"ec2/DescribeSubnets": 3, ...}
//	POST   /_emulator/insufficient-capacity  {"capacityType","instanceType","zone","on"}
//	POST   /_emulator/deny                   {"service","action","deny"}
//	PUT    /_emulator/policy                 an IAM policy document to enforce ("" lifts it)
//	GET    /_emulator/denials                the calls the policy refused (Denials)
//	POST   /_emulator/events                 {"kind","instanceId","noticeSeconds"} (events.go)
//	POST   /_emulator/instance-status        {"instanceId","instanceStatus","systemStatus",...} (ec2_instancestatus.go)
//	POST   /_emulator/zonal-shifts           {"awayFrom","expiresIn","autoshift"}: start a shift of the cluster (arczonalshift.go)
//	DELETE /_emulator/zonal-shifts/<id>      cancel it
//	POST   /_emulator/subnet-addresses       {"subnetId","availableIps"}: set a subnet's free addresses (0: launches there fail)
func (e *Emulator) serveControl(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	bad := func(err error) { reply(http.StatusBadRequest, map[string]string{"error": err.Error()}) }
	switch {
	case r.URL.Path == "/_emulator/faults" && r.Method == http.MethodPost:
		var in struct {
			Service, Action, Code string
			Rate                  float64
			Count                 int
			Latency               json.RawMessage
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			bad(err)
			return
		}
		latency, err := parseLatency(in.Latency)
		if err != nil {
			bad(err)
			return
		}
		if in.Rate < 0 || in.Rate > 1 || in.Count < 0 {
			bad(fmt.Errorf("rate must be within 0..1 and count >= 0"))
			return
		}
		e.InjectFault(Fault{Service: in.Service, Action: in.Action, Code: in.Code, Rate: in.Rate, Count: in.Count, Latency: latency})
		reply(http.StatusOK, map[string]string{"status": "injected"})
	case r.URL.Path == "/_emulator/faults" && r.Method == http.MethodDelete:
		e.ClearFaults()
		reply(http.StatusOK, map[string]string{"status": "cleared"})
	case r.URL.Path == "/_emulator/calls" && r.Method == http.MethodGet:
		reply(http.StatusOK, e.AllCalls())
	case r.URL.Path == "/_emulator/insufficient-capacity" && r.Method == http.MethodPost:
		var in struct {
			CapacityType, InstanceType, Zone string
			On                               bool
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			bad(err)
			return
		}
		e.SetInsufficientCapacity(in.CapacityType, in.InstanceType, in.Zone, in.On)
		reply(http.StatusOK, map[string]string{"status": "set"})
	case r.URL.Path == "/_emulator/deny" && r.Method == http.MethodPost:
		var in struct {
			Service, Action string
			Deny            bool
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			bad(err)
			return
		}
		if in.Deny {
			e.DenyAction(in.Service, in.Action)
		} else {
			e.AllowAction(in.Service, in.Action)
		}
		reply(http.StatusOK, map[string]string{"status": "set"})
	case r.URL.Path == "/_emulator/policy" && r.Method == http.MethodPut:
		b, err := io.ReadAll(r.Body)
		if err == nil {
			err = e.SetPolicy(string(b))
		}
		if err != nil {
			bad(err)
			return
		}
		reply(http.StatusOK, map[string]string{"status": "set"})
	case r.URL.Path == "/_emulator/denials" && r.Method == http.MethodGet:
		reply(http.StatusOK, e.Denials())
	case r.URL.Path == "/_emulator/events" && r.Method == http.MethodPost:
		status, err := e.controlEvent(r)
		if err != nil {
			reply(status, map[string]string{"error": err.Error()})
			return
		}
		reply(http.StatusOK, map[string]string{"status": "sent"})
	case r.URL.Path == "/_emulator/instance-status" && r.Method == http.MethodPost:
		status, err := e.controlInstanceStatus(r)
		if err != nil {
			reply(status, map[string]string{"error": err.Error()})
			return
		}
		reply(http.StatusOK, map[string]string{"status": "set"})
	case (r.URL.Path == "/_emulator/zonal-shifts" && r.Method == http.MethodPost) ||
		(strings.HasPrefix(r.URL.Path, "/_emulator/zonal-shifts/") && r.Method == http.MethodDelete):
		status, out, err := e.controlZonalShift(r)
		if err != nil {
			reply(status, map[string]string{"error": err.Error()})
			return
		}
		reply(status, out)
	case r.URL.Path == "/_emulator/subnet-addresses" && r.Method == http.MethodPost:
		var in struct {
			SubnetID     string
			AvailableIPs *int `json:"availableIps"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			bad(err)
			return
		}
		if in.AvailableIPs == nil {
			bad(fmt.Errorf("availableIps is required"))
			return
		}
		if err := e.SetSubnetAvailableIPs(in.SubnetID, *in.AvailableIPs); err != nil {
			reply(http.StatusNotFound, map[string]string{"error": err.Error()})
			return
		}
		reply(http.StatusOK, map[string]string{"status": "set"})
	default:
		reply(http.StatusNotFound, map[string]string{"error": "unknown control request " + r.Method + " " + r.URL.Path})
	}
}

func parseLatency(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return time.ParseDuration(s)
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("latency must be a duration string or nanoseconds: %w", err)
	}
	return time.Duration(n), nil
}
