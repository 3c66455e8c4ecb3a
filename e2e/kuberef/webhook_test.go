package kuberef

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"strings"
)

// admissionWebhook is an HTTPS server answering AdmissionReviews, which kube-apiserver and
// sqlkube both call: what it answers depends on the path (webhookAnswers).
type admissionWebhook struct {
	// url is its base URL (https://127.0.0.1:PORT); caBundle the base64 of its CA's PEM
	// certificate, as a webhook configuration's clientConfig carries it.
	url, caBundle string
	server        *http.Server
}

// startAdmissionWebhook serves the webhook on 127.0.0.1 with a certificate from a CA of its own.
func startAdmissionWebhook() (*admissionWebhook, error) {
	ca, err := newAuthority()
	if err != nil {
		return nil, err
	}
	cert, err := ca.servingCert()
	if err != nil {
		return nil, err
	}
	listener, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		return nil, err
	}
	w := &admissionWebhook{
		url:      "https://" + listener.Addr().String(),
		caBundle: base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})),
		server:   &http.Server{Handler: http.HandlerFunc(answerReview)},
	}
	go func() {
		if err := w.server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			panic(err)
		}
	}()
	return w, nil
}

func (w *admissionWebhook) stop() { _ = w.server.Close() }

// webhookAnswers are the AdmissionReview responses by path (without the uid, which is the
// request's): allowed, denied with and without a code, warnings, audit annotations, and a JSON
// patch that adds a label.
var webhookAnswers = map[string]string{
	"/allow":     `{"allowed":true}`,
	"/deny":      `{"allowed":false,"status":{"code":403,"reason":"Forbidden","message":"configmaps are closed today"}}`,
	"/deny-bare": `{"allowed":false,"status":{"message":"no reason given"}}`,
	"/warn":      `{"allowed":true,"warnings":["the webhook warns","and warns again"]}`,
	"/annotate":  `{"allowed":true,"auditAnnotations":{"checked":"yes","by":"kuberef"}}`,
	"/mutate": `{"allowed":true,"patchType":"JSONPatch","patch":"` +
		base64.StdEncoding.EncodeToString([]byte(`[{"op":"add","path":"/metadata/labels/mutated","value":"by-webhook"},{"op":"add","path":"/data","value":{"added":"yes"}}]`)) +
		`","auditAnnotations":{"mutated":"yes"}}`,
}

// answerReview answers the AdmissionReview a server sent. /hang answers nothing until the
// caller gives up (its timeout).
func answerReview(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/hang" {
		<-r.Context().Done()
		return
	}
	var review struct {
		Request struct{ UID string } `json:"request"`
	}
	answer, ok := webhookAnswers[r.URL.Path]
	if !ok || json.NewDecoder(r.Body).Decode(&review) != nil {
		http.Error(w, "not a review this webhook answers", http.StatusBadRequest)
		return
	}
	uid, _ := json.Marshal(review.Request.UID)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":` +
		strings.Replace(answer, "{", `{"uid":`+string(uid)+",", 1) + `}`))
}
