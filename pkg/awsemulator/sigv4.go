package awsemulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// authFailure classifies why a request's SigV4 signature was rejected; each protocol
// turns it into the error code AWS answers with (see authError in protocols.go).
type authFailure int

const (
	authOK authFailure = iota
	authMissing
	authUnknownKey
	authWrongRegion
	authWrongService
	authBadSignature
)

// sigV4 is the parsed Authorization header:
// AWS4-HMAC-SHA256 Credential=AKID/20251115/us-west-2/ec2/aws4_request, SignedHeaders=host;x-amz-date, Signature=hex
type sigV4 struct {
	accessKey, date, region, service string
	signedHeaders                    []string
	signature                        string
}

func parseAuthorization(h string) (sigV4, bool) {
	const algo = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(h, algo) {
		return sigV4{}, false
	}
	var s sigV4
	for _, part := range strings.Split(h[len(algo):], ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return sigV4{}, false
		}
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return sigV4{}, false
			}
			s.accessKey, s.date, s.region, s.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			s.signedHeaders = strings.Split(v, ";")
		case "Signature":
			s.signature = v
		}
	}
	if s.accessKey == "" || s.signature == "" || len(s.signedHeaders) == 0 {
		return sigV4{}, false
	}
	return s, true
}

// credentialService reads the signing name from the credential scope, "" if absent.
func credentialService(r *http.Request) string {
	s, ok := parseAuthorization(r.Header.Get("Authorization"))
	if !ok {
		return ""
	}
	return s.service
}

// verifySigV4 recomputes the signature of r exactly as aws-sdk-go-v2's v4 signer builds it
// and compares. regions are the credential-scope regions this service accepts.
func (e *Emulator) verifySigV4(r *http.Request, body []byte, service string, regions []string) authFailure {
	s, ok := parseAuthorization(r.Header.Get("Authorization"))
	if !ok {
		return authMissing
	}
	if s.accessKey != e.opts.AccessKeyID {
		return authUnknownKey
	}
	regionOK := false
	for _, reg := range regions {
		regionOK = regionOK || reg == s.region
	}
	if !regionOK {
		return authWrongRegion
	}
	if s.service != service {
		return authWrongService
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if len(amzDate) < 8 || amzDate[:8] != s.date {
		return authBadSignature
	}

	canonical := strings.Join([]string{
		r.Method,
		escapePath(canonicalPath(r.URL)),
		canonicalQuery(r.URL.Query()),
		canonicalHeaders(r, s.signedHeaders),
		strings.Join(s.signedHeaders, ";"),
		payloadHash(r, body),
	}, "\n")
	scope := s.date + "/" + s.region + "/" + s.service + "/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hexSHA256([]byte(canonical))

	key := hmacSHA256([]byte("AWS4"+e.opts.SecretAccessKey), s.date)
	key = hmacSHA256(key, s.region)
	key = hmacSHA256(key, s.service)
	key = hmacSHA256(key, "aws4_request")
	want := hex.EncodeToString(hmacSHA256(key, toSign))
	if !hmac.Equal([]byte(want), []byte(s.signature)) {
		return authBadSignature
	}
	return authOK
}

func canonicalPath(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		return "/"
	}
	return p
}

// escapePath percent-encodes every byte outside the unreserved set except '/', as the SDK
// does on the already-escaped path (so "%" of an escape is encoded again).
func escapePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if unreserved(c) || c == '/' {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{c})))
		}
	}
	return b.String()
}

func unreserved(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func canonicalQuery(q url.Values) string {
	type kv struct{ k, v string }
	var params []kv
	for k, vs := range q {
		for _, v := range vs {
			params = append(params, kv{queryEscape(k), queryEscape(v)})
		}
	}
	sort.Slice(params, func(i, j int) bool {
		if params[i].k != params[j].k {
			return params[i].k < params[j].k
		}
		return params[i].v < params[j].v
	})
	parts := make([]string, len(params))
	for i, p := range params {
		parts[i] = p.k + "=" + p.v
	}
	return strings.Join(parts, "&")
}

func queryEscape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

func canonicalHeaders(r *http.Request, signed []string) string {
	var b strings.Builder
	for _, h := range signed {
		var values []string
		switch h {
		case "host":
			values = []string{r.Host}
		case "content-length":
			values = []string{strconv.FormatInt(r.ContentLength, 10)}
		default:
			values = append([]string(nil), r.Header.Values(h)...)
		}
		for i, v := range values {
			values[i] = strings.TrimSpace(collapseSpaces(v))
		}
		b.WriteString(h + ":" + strings.Join(values, ",") + "\n")
	}
	return b.String()
}

func collapseSpaces(s string) string {
	for strings.Contains(s, "  ") {
		s = strings.ReplaceAll(s, "  ", " ")
	}
	return s
}

// payloadHash: the SDK signs the SHA-256 of the body, or the value it sent in
// X-Amz-Content-Sha256 when it sent one (S3-style; kept for other clients).
func payloadHash(r *http.Request, body []byte) string {
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" {
		return h
	}
	return hexSHA256(body)
}

func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}
