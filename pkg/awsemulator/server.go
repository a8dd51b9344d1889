package awsemulator

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// handler answers one operation. For query protocols it returns an xmlBody, for JSON
// protocols any JSON-marshalable value (nil = {}). Errors should be *apiError.
type handler func(c *call) (any, error)

// service describes one AWS service behind the shared listener.
type service struct {
	name      string // signing name and Calls key: "ec2", "iam", ...
	protocol  protocol
	xmlns     string // query protocols
	namespace string // JSON error __type prefix (SQS)
	ops       map[string]handler
	// regions returns the credential-scope regions accepted for this service.
	regions func(e *Emulator) []string
}

// call is one request being answered.
type call struct {
	e         *Emulator
	svc       *service
	action    string
	r         *http.Request
	body      []byte
	form      url.Values // query protocols: the decoded form
	pathArgs  []string   // REST: path parameters
	requestID string
}

func ownRegion(e *Emulator) []string { return []string{e.opts.Region} }

var services map[string]*service

func init() {
	services = map[string]*service{
		"ec2": {name: "ec2", protocol: protoEC2Query, xmlns: "http://ec2.amazonaws.com/doc/2016-11-15/", ops: ec2Ops(), regions: ownRegion},
		"iam": {name: "iam", protocol: protoAWSQuery, xmlns: "https://iam.amazonaws.com/doc/2010-05-08/", ops: iamOps(),
			// IAM is global: the SDK signs it for us-east-1 (or the client's region with a custom endpoint).
			regions: func(e *Emulator) []string { return []string{e.opts.Region, "us-east-1"} }},
		"ssm": {name: "ssm", protocol: protoJSON11, ops: ssmOps(), regions: ownRegion},
		"pricing": {name: "pricing", protocol: protoJSON11, ops: pricingOps(),
			// The Pricing API lives in three regions only; clients sign for the one they call.
			regions: func(*Emulator) []string { return []string{"us-east-1", "ap-south-1", "eu-central-1"} }},
		"sqs": {name: "sqs", protocol: protoJSON10, namespace: "com.amazonaws.sqs", ops: sqsOps(), regions: ownRegion},
		"eks": {name: "eks", protocol: protoRESTJSON, ops: eksOps(), regions: ownRegion},
		// The SDK signs ARC zonal shift requests as "arc-zonal-shift", the
		// IAM action prefix too.
		"arc-zonal-shift": {name: "arc-zonal-shift", protocol: protoRESTJSON, ops: arcZonalShiftOps(), regions: ownRegion},
	}
}

// jsonTargets maps the X-Amz-Target prefix of JSON protocols to the service.
var jsonTargets = map[string]string{
	"AmazonSSM":           "ssm",
	"AWSPriceListService": "pricing",
	"AmazonSQS":           "sqs",
}

var requestCounter atomic.Uint64

// ServeHTTP routes a request: control endpoint, else identify service and action, count
// it, verify SigV4, apply faults and denials, and dispatch.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_emulator/") {
		e.serveControl(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	c := &call{e: e, r: r, body: body, requestID: newRequestID()}
	if apiErr := c.identify(); apiErr != nil {
		if c.svc != nil {
			e.countCall(c.svc.name, c.action)
		}
		writeError(w, c, apiErr)
		return
	}
	e.countCall(c.svc.name, c.action)

	if f := e.verifySigV4(r, body, c.svc.name, c.svc.regions(e)); f != authOK {
		writeError(w, c, authError(c.svc.protocol, f, e.opts.Region))
		return
	}
	if fault, latency := e.faults.match(c.svc.name, c.action, c.svc.protocol); fault != nil || latency > 0 {
		if latency > 0 && !e.sleep(r, latency) {
			return
		}
		if fault != nil {
			writeError(w, c, fault)
			return
		}
	}
	h := c.svc.ops[c.action]
	if h == nil {
		writeError(w, c, unknownAction(c))
		return
	}
	if denied := e.denied(c); denied != nil {
		writeError(w, c, denied)
		return
	}
	if denied := e.authorize(c); denied != nil {
		writeError(w, c, denied)
		return
	}
	out, err := h(c)
	if err != nil {
		apiErr, ok := err.(*apiError)
		if !ok {
			apiErr = errorf(500, "InternalFailure", "%v", err)
		}
		writeError(w, c, apiErr)
		return
	}
	writeSuccess(w, c, out)
}

// identify finds the service from the request's shape (checked against the credential
// scope by SigV4) and the action.
func (c *call) identify() *apiError {
	r := c.r
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		prefix, op, _ := strings.Cut(target, ".")
		name, ok := jsonTargets[prefix]
		if !ok {
			c.svc = &service{protocol: protoJSON11}
			return errorf(400, "UnknownOperationException", "unknown target %q", target)
		}
		c.svc, c.action = services[name], op
		return nil
	}
	if strings.HasPrefix(r.URL.Path, "/clusters") {
		c.svc = services["eks"]
		return c.routeEKS()
	}
	if isARCPath(r.URL.Path) {
		c.svc = services["arc-zonal-shift"]
		return c.routeARC()
	}
	if r.Method == http.MethodPost {
		form, err := url.ParseQuery(string(c.body))
		if err != nil {
			c.svc = services[fallbackService(r)]
			return errorf(400, "MalformedQueryString", "%v", err)
		}
		c.form = form
		switch form.Get("Version") {
		case "2016-11-15":
			c.svc = services["ec2"]
		case "2010-05-08":
			c.svc = services["iam"]
		default:
			c.svc = services[fallbackService(r)]
			if c.svc == nil {
				c.svc = services["ec2"]
			}
			c.action = form.Get("Action")
			return errorf(400, "InvalidParameterValue", "unsupported API Version %q", form.Get("Version"))
		}
		c.action = form.Get("Action")
		if c.action == "" {
			return errorf(400, "MissingAction", "The request must contain the parameter Action")
		}
		return nil
	}
	c.svc = services[fallbackService(r)]
	if c.svc == nil {
		c.svc = services["eks"]
	}
	return errorf(404, "UnknownOperationException", "no operation at %s %s", r.Method, r.URL.Path)
}

func fallbackService(r *http.Request) string { return credentialService(r) }

func unknownAction(c *call) *apiError {
	switch c.svc.protocol {
	case protoEC2Query, protoAWSQuery:
		return errorf(400, "InvalidAction", "The action %s is not valid for this web service.", c.action)
	default:
		return errorf(400, "UnknownOperationException", "The emulator does not implement %s.%s", c.svc.name, c.action)
	}
}

// sleep waits d unless the client goes away or the emulator closes.
func (e *Emulator) sleep(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-e.done:
		return false
	}
}

// newRequestID is a UUID-shaped, deterministic sequence of request IDs.
func newRequestID() string {
	n := requestCounter.Add(1)
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], n)
	h := sha256.Sum256(buf[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
