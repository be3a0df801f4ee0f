# A customer contacts support from the self-check page, and support's queue of requests.

## The self-check page (the customer reads these)
sc-contact-support = Contact support
sc-support-lead = Still a problem? The check's results and your note go to support together, and support will contact you soon.
sc-support-note-label = Anything to add (optional)
sc-support-note-too-long = A note may have at most 500 characters; please shorten it.
sc-support-note-control = The note has characters that cannot be sent; please remove them.
sc-support-sent = Sent to support at { $at }; support will contact you soon. To add something, you can send again after { $next }.
sc-support-no-such-order = Order not found
sc-support-no-such-order-why = This order is not in your account. Go back to the check and contact support from one of your own orders.
sc-support-back-to-check = Back to the check

## Console: support requests
nav-support-requests = Support requests
support-requests-title = Support requests
support-requests-intro = Requests customers sent with “Contact support” on their self-check page, each with the check's results at the time and the customer's note. The oldest is on top; mark each handled when done.
support-requests-open-n = Open ({ $n })
support-requests-handled-tab = Recently handled
support-requests-none-open = No support requests are open.
support-requests-none-handled = No support request has been handled yet.
support-requests-more = Showing { $shown } of { $total }.
support-requests-of-order = Support requests about this order
support-request-open = Open
support-request-handled = Handled
support-request-asked-at = Sent
support-request-customer = Customer
support-request-note = Customer's note
support-request-no-note = (no note)
support-request-findings = The check at the time
support-request-no-findings = (no findings)
support-request-mark-handled = Mark handled
support-request-handled-by = Handled by { $by }
support-request-done = The support request about order { $order_no } is marked handled.
support-request-already-handled = This support request was already handled.
what-support-request = Support request
queue-support-requests = customer support requests waiting
