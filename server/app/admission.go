package app

import (
	"fmt"
	"net"
	"strings"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/sqlkube/sqlkube/server/admission"
)

// addAdmissionFlags declares the admission chain's flags: kube-apiserver's own
// (--enable-admission-plugins, --disable-admission-plugins, --admission-control-config-file, the
// deprecated --admission-control, and DefaultTolerationSeconds' two), declared by kube's
// admission options, and where webhooks are called.
func addAdmissionFlags(fs *pflag.FlagSet, c *admission.Options) {
	c.Plugins = admission.NewPluginOptions()
	c.Plugins.AddFlags(fs)
	fs.StringToStringVar(&c.WebhookServices, "webhook-service-resolver", nil,
		"where admission webhooks given by service reference are called, as NAMESPACE/NAME=HOST:PORT pairs separated by commas "+
			"(sqlkube has no cluster network; a service not listed is called at https://NAME.NAMESPACE.svc:PORT; "+
			"the webhook's certificate is verified for NAME.NAMESPACE.svc either way)")
}

// checkAdmission refuses what kube-apiserver's admission options refuse (unknown plugins, a
// plugin both enabled and disabled), in its words, and a --webhook-service-resolver entry that
// is not NAMESPACE/NAME=HOST:PORT.
func checkAdmission(c admission.Options) error {
	if errs := c.Plugins.Validate(); len(errs) > 0 {
		return utilerrors.NewAggregate(errs)
	}
	for service, hostPort := range c.WebhookServices {
		namespace, name, ok := strings.Cut(service, "/")
		if _, _, err := net.SplitHostPort(hostPort); !ok || namespace == "" || name == "" || err != nil {
			return fmt.Errorf("--webhook-service-resolver: %s=%s is not NAMESPACE/NAME=HOST:PORT", service, hostPort)
		}
	}
	return nil
}
