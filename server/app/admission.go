package app

import (
	"fmt"
	"net"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sqlkube/sqlkube/server/admission"
)

// addAdmissionFlags declares the admission chain's flags.
func addAdmissionFlags(fs *pflag.FlagSet, c *admission.Options) {
	fs.StringToStringVar(&c.WebhookServices, "webhook-service-resolver", nil,
		"where admission webhooks given by service reference are called, as NAMESPACE/NAME=HOST:PORT pairs separated by commas "+
			"(sqlkube has no cluster network; a service not listed is called at https://NAME.NAMESPACE.svc:PORT; "+
			"the webhook's certificate is verified for NAME.NAMESPACE.svc either way)")
}

// checkAdmission refuses a --webhook-service-resolver entry that is not NAMESPACE/NAME=HOST:PORT.
func checkAdmission(c admission.Options) error {
	for service, hostPort := range c.WebhookServices {
		namespace, name, ok := strings.Cut(service, "/")
		if _, _, err := net.SplitHostPort(hostPort); !ok || namespace == "" || name == "" || err != nil {
			return fmt.Errorf("--webhook-service-resolver: %s=%s is not NAMESPACE/NAME=HOST:PORT", service, hostPort)
		}
	}
	return nil
}
