package admission

import (
	"net/url"

	webhookutil "k8s.io/apiserver/pkg/util/webhook"
)

// WebhookAuthentication is how sqlkube authenticates to the webhooks it calls, admission and
// CRD conversion webhooks alike: it presents no client credentials (kube's
// --admission-control-config-file kubeconfig for them is not offered).
func WebhookAuthentication() webhookutil.AuthenticationInfoResolverWrapper {
	return func(resolver webhookutil.AuthenticationInfoResolver) webhookutil.AuthenticationInfoResolver {
		return resolver
	}
}

// WebhookServiceResolver resolves the service references of webhooks, admission and CRD
// conversion webhooks alike, as Options.WebhookServices says: by mapped, "namespace/name" to
// host:port, or else by their cluster DNS name.
func WebhookServiceResolver(mapped map[string]string) webhookutil.ServiceResolver {
	return serviceResolver{mapped: mapped, dns: webhookutil.NewDefaultServiceResolver()}
}

type serviceResolver struct {
	mapped map[string]string
	dns    webhookutil.ServiceResolver
}

func (r serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	if hostPort, ok := r.mapped[namespace+"/"+name]; ok {
		return &url.URL{Scheme: "https", Host: hostPort}, nil
	}
	return r.dns.ResolveEndpoint(namespace, name, port)
}
