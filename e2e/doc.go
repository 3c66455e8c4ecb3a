// Package e2e holds black-box tests of the sqlkube binary: it is built once, started on SQLite
// and on PostgreSQL, and driven through the network with client-go, kubectl and raw HTTP, the
// way kube-apiserver's users drive it. The tests assert what kube-apiserver answers.
package e2e
