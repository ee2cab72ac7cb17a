package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Uploads over plain http send their bodies as UNSIGNED-PAYLOAD, a single PUT and the parts of
// a multipart upload alike; the requests stay signed.
func TestUploadUnsignedPayload(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{} // request -> X-Amz-Content-Sha256
	var received int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		q := r.URL.Query()
		op := r.Method
		switch {
		case r.Method == http.MethodPost && q.Has("uploads"):
			op = "create"
			fmt.Fprint(w, `<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>u</UploadId></InitiateMultipartUploadResult>`)
		case r.Method == http.MethodPut && q.Has("partNumber"):
			op = "part " + q.Get("partNumber")
			w.Header().Set("ETag", `"e`+q.Get("partNumber")+`"`)
		case r.Method == http.MethodPost && q.Has("uploadId"):
			op = "complete"
			fmt.Fprint(w, `<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag>"e"</ETag></CompleteMultipartUploadResult>`)
		case r.Method == http.MethodPut:
			op = "put"
		}
		mu.Lock()
		defer mu.Unlock()
		if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
			t.Errorf("%s: not signed: %q", op, r.Header.Get("Authorization"))
		}
		got[op] = r.Header.Get("X-Amz-Content-Sha256")
		if op == "put" || strings.HasPrefix(op, "part") {
			received += len(body)
		}
	}))
	defer srv.Close()
	s, err := NewS3Store(S3Config{Endpoint: srv.URL, Bucket: "b", Key: "k", ForcePathStyle: true, AccessKeyID: "a", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1 << 10, PartSize + 1<<10} {
		clear(got)
		received = 0
		if err := s.Put(context.Background(), bytes.NewReader(make([]byte, size)), Meta{Owner: "o"}); err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if received != size {
			t.Errorf("%d bytes: the server received %d", size, received)
		}
		for _, op := range []string{"put", "part 1", "part 2"} {
			if v, ok := got[op]; ok && v != "UNSIGNED-PAYLOAD" {
				t.Errorf("%d bytes: %s sent X-Amz-Content-Sha256 %q, want UNSIGNED-PAYLOAD", size, op, v)
			}
		}
		if len(got) == 0 || (got["put"] == "" && got["part 2"] == "") {
			t.Errorf("%d bytes: requests %v", size, got)
		}
	}
}
