// Package httpclient is the HTTP client the AWS provider's SDK clients use: the
// SDK's default client with a fix for a connection-killing race between the
// SDK and net/http.
//
// smithy-go hands net/http a request body that implements io.WriterTo and
// answers io.EOF from WriteTo once the SDK closed it. The SDK closes the
// request body as soon as the response headers arrive; when the server
// answers before net/http's writer goroutine finished its final drain of the
// body (a fast endpoint and a response large enough to still be in flight),
// that drain goes through WriteTo, gets io.EOF as an error, and net/http
// closes the connection under the response being read. The SDK then fails
// with "failed to decode response body ... use of closed network connection"
// and retries, using up attempts and the retry quota (against the local AWS
// emulator about every second DescribeInstanceTypes page; aws-sdk-go-v2
// #2737). Hiding WriteTo makes net/http drain with Read, which returns io.EOF
// as the end of the body. The emulator's AWSConfig does the same for tests;
// this is for the operator's own clients.
package httpclient

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// New wraps the SDK's default HTTP client.
func New() aws.HTTPClient { return Wrap(awshttp.NewBuildableClient()) }

// Wrap returns c with request bodies that do not expose io.WriterTo.
func Wrap(c aws.HTTPClient) aws.HTTPClient { return client{next: c} }

// Configure sets cfg's HTTP client to New() unless one is set, and wraps the
// one that is.
func Configure(cfg *aws.Config) {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = New()
		return
	}
	if _, ok := cfg.HTTPClient.(client); !ok {
		cfg.HTTPClient = Wrap(cfg.HTTPClient)
	}
}

type client struct{ next aws.HTTPClient }

func (c client) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		if _, ok := r.Body.(io.WriterTo); ok {
			r.Body = readCloser{r.Body}
		}
	}
	return c.next.Do(r)
}

// readCloser exposes Read and Close only.
type readCloser struct{ io.ReadCloser }
