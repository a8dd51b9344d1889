package awsemulator

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// protocol is the wire protocol of a service, as aws-sdk-go-v2 speaks it.
type protocol int

const (
	protoEC2Query protocol = iota // EC2: form-encoded Action=..., XML answer, <Response><Errors> errors
	protoAWSQuery                 // IAM: form-encoded Action=..., XML answer in <ActionResult>, <ErrorResponse> errors
	protoJSON10                   // SQS: X-Amz-Target, application/x-amz-json-1.0
	protoJSON11                   // SSM, Pricing: X-Amz-Target, application/x-amz-json-1.1
	protoRESTJSON                 // EKS, ARC zonal shift: method + path, JSON bodies, X-Amzn-ErrorType errors
)

// apiError is an AWS error answer; every protocol renders it in its own shape.
type apiError struct {
	Status  int
	Code    string
	Message string
	// QueryCode is the awsQuery-compatible code SQS also sends in X-Amzn-Query-Error.
	QueryCode string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// xmlBody is the inner XML of a query-protocol answer: for EC2 the children of
// <ActionResponse>, for IAM the children of <ActionResult>.
type xmlBody string

// xb builds XML fragments. Empty strings are omitted by leaf (AWS leaves unset members out).
type xb struct{ strings.Builder }

func (b *xb) open(name string)  { b.WriteString("<" + name + ">") }
func (b *xb) close(name string) { b.WriteString("</" + name + ">") }

func (b *xb) leaf(name, v string) {
	if v == "" {
		return
	}
	b.leafAlways(name, v)
}

func (b *xb) leafAlways(name, v string) {
	b.open(name)
	_ = xml.EscapeText(&b.Builder, []byte(v))
	b.close(name)
}

func (b *xb) boolean(name string, v bool) { b.leafAlways(name, strconv.FormatBool(v)) }
func (b *xb) integer(name string, v int64) {
	b.leafAlways(name, strconv.FormatInt(v, 10))
}
func (b *xb) timestamp(name string, t time.Time) {
	if t.IsZero() {
		return
	}
	b.leafAlways(name, t.UTC().Format("2006-01-02T15:04:05.000Z"))
}

// stringList writes <name><item>v</item>...</name> (EC2 uses item, IAM member).
func (b *xb) stringList(name, item string, values []string) {
	b.open(name)
	for _, v := range values {
		b.leafAlways(item, v)
	}
	b.close(name)
}

// itemList writes <name><item><leaf>v</leaf></item>...</name>, as EC2 lists ids on an instance.
func (b *xb) itemList(name, leaf string, values []string) {
	b.open(name)
	for _, v := range values {
		b.open("item")
		b.leafAlways(leaf, v)
		b.close("item")
	}
	b.close(name)
}

// tagSet writes tags sorted by key, as <name><item><key/><value/></item></name>.
func (b *xb) tagSet(name, item, keyElem, valueElem string, tags map[string]string) {
	b.open(name)
	for _, k := range sortedKeys(tags) {
		b.open(item)
		b.leafAlways(keyElem, k)
		b.leafAlways(valueElem, tags[k])
		b.close(item)
	}
	b.close(name)
}

func (b *xb) body() xmlBody { return xmlBody(b.String()) }

// writeSuccess renders a handler's result in the protocol's success shape.
func writeSuccess(w http.ResponseWriter, c *call, out any) {
	switch c.svc.protocol {
	case protoEC2Query:
		body, _ := out.(xmlBody)
		doc := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<%sResponse xmlns="%s"><requestId>%s</requestId>%s</%sResponse>`,
			c.action, c.svc.xmlns, c.requestID, body, c.action)
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, doc)
	case protoAWSQuery:
		body, _ := out.(xmlBody)
		w.Header().Set("Content-Type", "text/xml")
		w.Header().Set("X-Amzn-Requestid", c.requestID)
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, `<%sResponse xmlns="%s"><%sResult>%s</%sResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>`,
			c.action, c.svc.xmlns, c.action, body, c.action, c.requestID, c.action)
	default:
		if out == nil {
			out = struct{}{}
		}
		status := http.StatusOK
		if cr, ok := out.(created); ok {
			status, out = http.StatusCreated, cr.body
		}
		b, err := json.Marshal(out)
		if err != nil {
			writeError(w, c, errorf(500, "InternalFailure", "encoding answer: %v", err))
			return
		}
		w.Header().Set("Content-Type", c.svc.contentType())
		w.Header().Set("X-Amzn-Requestid", c.requestID)
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}
}

func (s *service) contentType() string {
	switch s.protocol {
	case protoJSON10:
		return "application/x-amz-json-1.0"
	case protoJSON11:
		return "application/x-amz-json-1.1"
	case protoRESTJSON:
		return "application/json"
	}
	return "text/xml"
}

// writeError renders an apiError in the protocol's error shape.
func writeError(w http.ResponseWriter, c *call, e *apiError) {
	status := e.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	var proto protocol
	if c.svc != nil {
		proto = c.svc.protocol
	}
	switch proto {
	case protoEC2Query:
		var b xb
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
		b.open("Response")
		b.open("Errors")
		b.open("Error")
		b.leafAlways("Code", e.Code)
		b.leafAlways("Message", e.Message)
		b.close("Error")
		b.close("Errors")
		b.leafAlways("RequestID", c.requestID)
		b.close("Response")
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(b.String()))
	case protoAWSQuery:
		var b xb
		fmt.Fprintf(&b, `<ErrorResponse xmlns="%s">`, c.svc.xmlns)
		b.open("Error")
		kind := "Sender"
		if status >= 500 {
			kind = "Receiver"
		}
		b.leafAlways("Type", kind)
		b.leafAlways("Code", e.Code)
		b.leafAlways("Message", e.Message)
		b.close("Error")
		b.leafAlways("RequestId", c.requestID)
		b.close("ErrorResponse")
		w.Header().Set("Content-Type", "text/xml")
		w.Header().Set("X-Amzn-Requestid", c.requestID)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(b.String()))
	case protoRESTJSON:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Errortype", e.Code)
		w.Header().Set("X-Amzn-Requestid", c.requestID)
		w.WriteHeader(status)
		b, _ := json.Marshal(map[string]string{"message": e.Message})
		_, _ = w.Write(b)
	default: // JSON 1.0 / 1.1
		typ := e.Code
		if c.svc.namespace != "" {
			typ = c.svc.namespace + "#" + e.Code
		}
		if e.QueryCode != "" {
			fault := "Sender"
			if status >= 500 {
				fault = "Receiver"
			}
			w.Header().Set("X-Amzn-Query-Error", e.QueryCode+";"+fault)
		}
		w.Header().Set("Content-Type", c.svc.contentType())
		w.Header().Set("X-Amzn-Requestid", c.requestID)
		w.WriteHeader(status)
		b, _ := json.Marshal(map[string]string{"__type": typ, "message": e.Message})
		_, _ = w.Write(b)
	}
}

// authError is the error AWS answers for a rejected signature, per protocol.
func authError(proto protocol, f authFailure, region string) *apiError {
	const (
		badSig  = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
		badKey  = "The security token included in the request is invalid."
		missing = "Missing Authentication Token"
	)
	badRegion := fmt.Sprintf("Credential should be scoped to a valid region, not the one in the request (this endpoint serves %s).", region)
	switch proto {
	case protoEC2Query:
		msg := "AWS was not able to validate the provided access credentials"
		if f == authWrongRegion {
			msg = badRegion
		}
		return errorf(http.StatusUnauthorized, "AuthFailure", "%s", msg)
	case protoAWSQuery:
		switch f {
		case authMissing:
			return errorf(http.StatusForbidden, "MissingAuthenticationToken", "Request is missing Authentication Token")
		case authUnknownKey:
			return errorf(http.StatusForbidden, "InvalidClientTokenId", badKey)
		case authWrongRegion:
			return errorf(http.StatusForbidden, "SignatureDoesNotMatch", "%s", badRegion)
		default:
			return errorf(http.StatusForbidden, "SignatureDoesNotMatch", badSig)
		}
	default:
		status := http.StatusBadRequest
		if proto == protoRESTJSON {
			status = http.StatusForbidden
		}
		switch f {
		case authMissing:
			return errorf(status, "MissingAuthenticationTokenException", missing)
		case authUnknownKey:
			return errorf(status, "UnrecognizedClientException", badKey)
		case authWrongRegion:
			return errorf(status, "InvalidSignatureException", "%s", badRegion)
		default:
			return errorf(status, "InvalidSignatureException", badSig)
		}
	}
}

// statusForCode is the HTTP status AWS uses for an injected fault's error code.
func statusForCode(proto protocol, code string) int {
	switch code {
	case "RequestLimitExceeded":
		if proto == protoEC2Query {
			return http.StatusServiceUnavailable
		}
		return http.StatusBadRequest
	case "Throttling", "ThrottlingException", "RequestThrottled", "RequestThrottledException":
		return http.StatusBadRequest
	case "TooManyRequestsException":
		if proto == protoRESTJSON {
			return http.StatusTooManyRequests
		}
		return http.StatusBadRequest
	case "InternalError", "InternalFailure", "InternalServerError", "InternalServerException", "ServerException", "ServiceFailure":
		return http.StatusInternalServerError
	case "ServiceUnavailable", "Unavailable", "ServiceUnavailableException":
		return http.StatusServiceUnavailable
	case "InsufficientInstanceCapacity":
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

func faultMessage(code string) string {
	switch code {
	case "RequestLimitExceeded":
		return "Request limit exceeded."
	case "Throttling", "ThrottlingException":
		return "Rate exceeded"
	case "InternalError", "InternalFailure":
		return "An internal error has occurred"
	case "ServiceUnavailable":
		return "The service is unavailable. Please try again shortly."
	}
	return "Fault injected by the AWS emulator"
}

// sortedStrings returns a sorted copy.
func sortedStrings(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}
