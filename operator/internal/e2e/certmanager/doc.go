// Package certmanager proves on the local cluster (build tag e2e) that the Certificates the
// operator emits (operator/internal/pki) are accepted by the real apiserver and issued by a
// real cert-manager controller, and that what cert-manager writes passes the operator's own
// validation, and that an issuer of another group and kind (external issuer, played by the
// test) receives the request with the certificate template applied. cert-manager runs from the
// tools cache (framework.StartCertManager).
package certmanager
