# Expiry spreading and the wake-up before expiry

## Expiry spreading (templates)
rule-expiry-spread = ends spread: up to { $n } { $unit ->
        [day] { $n ->
            [one] day
           *[other] days
        }
        [hour] { $n ->
            [one] hour
           *[other] hours
        }
        [minute] { $n ->
            [one] minute
           *[other] minutes
        }
       *[second] { $n ->
            [one] second
           *[other] seconds
        }
    } early
template-expiry-spread = Expiry spread
template-no-expiry-spread = none (coupons end at the template's end)
template-expiry-spread-minutes = Spread ends over (minutes)
template-expiry-spread-hint = Optional. Each coupon ends a fixed random amount up to this many minutes early (never later than promised), so a big batch does not expire in the same second; shorter than the validity, at most 7 days.
template-error-expiry-spread = Enter whole minutes from 0 to 10080, shorter than the validity

## Wake-up before expiry: the customer's text ($count coupons, $days calendar days in the business zone, $worth yuan or none)
wakeup-message = You have { $count } { $count ->
        [one] coupon
       *[other] coupons
    } expiring { $days ->
        [0] today
        [1] tomorrow
       *[other] in { $days } days
    }{ $worth ->
        [none] { "" }
       *[other] , worth { $worth } yuan in total
    }. Don't miss { $count ->
        [one] it
       *[other] them
    }.
wakeup-message-bonus = You have { $count } { $count ->
        [one] coupon
       *[other] coupons
    } expiring { $days ->
        [0] today
        [1] tomorrow
       *[other] in { $days } days
    }{ $worth ->
        [none] { "" }
       *[other] , worth { $worth } yuan in total
    }. Here is an extra { $bonus } coupon { $min ->
        [none] with no minimum
       *[other] for orders from { $min }
    }.

## Wake-up before expiry: the operator console
wakeup-nav = Wake-ups
wakeup-title = Wake-up before expiry
wakeup-intro = Some time before coupons end, remind recently active customers who hold them, optionally with an extra coupon with a lower minimum. Each expiring coupon is woken at most once; a share of customers is kept as a control group (sent nothing), to compare how many coupons get used.
wakeup-rules = Wake-up rules
wakeup-rule = Wake-up rule
wakeup-none = No wake-up rules yet.
wakeup-new = New wake-up rule
wakeup-name = Name
wakeup-lead = When
wakeup-lead-hours = Hours before the end
wakeup-lead-hint = For example 24 for one day before; 1 to 720 hours.
wakeup-active-days = Active within (days)
wakeup-active-hint = Only customers who browsed, added to a cart or visited their self-check page within this many days are woken; 1 to 90 days.
wakeup-templates = Templates
wakeup-templates-hint = Tick none for every template.
wakeup-all-templates = every template
wakeup-bonus = Wake-up coupon
wakeup-bonus-hint = Optional. Woken customers also get a coupon of this template (its stock and limit per customer apply).
wakeup-no-bonus = no coupon
wakeup-control = Control group
wakeup-control-hint = This percentage of customers is always the control group and is sent nothing; 0 to 50.
wakeup-create = Create rule
wakeup-created-flash = Wake-up rule “{ $name }” created
wakeup-status = Standing
wakeup-active = active
wakeup-paused = paused
wakeup-pause = Pause rule
wakeup-resume = Resume rule
wakeup-paused-flash = Rule paused
wakeup-resumed-flash = Rule resumed
wakeup-reason = Reason
wakeup-rule-title = Wake-up rule: { $name }
wakeup-who = Who is woken
wakeup-active-words = customers who browsed, added to a cart or visited within { $days } { $days ->
        [one] day
       *[other] days
    }
wakeup-active-hours-words = customers who browsed, added to a cart or visited within { $hours } { $hours ->
        [one] hour
       *[other] hours
    }
wakeup-control-words = { $pct }% of customers are the control group and are sent nothing
wakeup-created-at = Created
wakeup-all-rules = All wake-up rules
wakeup-results = Results
wakeup-results-note = Expiring coupons used after the wake-up (or, for the control group, the same moment) and before their end. Customers are split into the groups for good, so the difference between the two shares is what waking adds.
wakeup-compare = Woken: { $sent } used; control: { $control } used
wakeup-group = Group
wakeup-outcome-sent = woken
wakeup-outcome-control = control
wakeup-outcome-inactive = inactive (nothing sent)
wakeup-outcome-ordered = ordered since (skipped, nothing sent)
wakeup-users = Customers
wakeup-coupons = Expiring coupons
wakeup-used = Used before their end
wakeup-used-share = Share used
wakeup-bonus-coupons = Wake-up coupons
wakeup-needs-operator = Wake-up rules need the operator or admin role.
wakeup-error-name = Enter a name of 1 to 200 characters
wakeup-error-lead = Enter whole hours from 1 to 720
wakeup-error-active = Enter whole days from 1 to 90
wakeup-error-templates = A chosen template does not exist
wakeup-error-bonus = The chosen wake-up coupon template does not exist
wakeup-error-control = Enter a whole number from 0 to 50
wakeup-error-reason = Enter a reason
staff-action-wakeup_rule_create = wake-up rule created
staff-action-wakeup_rule_pause = wake-up rule paused
staff-action-wakeup_rule_resume = wake-up rule resumed
