# Coupon templates: the console's list, create form and detail page, and a
# template's rule in words (domain::template::rule_words).

## A rule in words: parts joined by rule-separator.
rule-separator = {", "}
# A percentage off reads as the percent ("10% off"); $zhe, the Chinese 折
# figure, is not shown in English. $min and $cap are money, or "none".
rule-percent-off = { $min ->
        [none] {""}
       *[other] orders from { $min }:{" "}
    }{ $zhe ->
       *[other] { $pct }% off
    }{ $cap ->
        [none] {""}
       *[other] , at most { $cap }
    }
rule-categories = { $list }
rule-valid-after-claim = valid { $n } { $unit ->
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
    } after claiming
rule-valid-between = valid from { $from } to { $until }
rule-usable-from = usable from { $at }
rule-valid-no-later-than = ending { $at } at the latest

## Navigation and titles
templates-nav = Templates
templates-title = Coupon templates
template-title = Template: { $name }
template-new = New template
template-new-title = New coupon template

## Where a template stands for claiming (domain::template::ClaimStanding)
template-standing-active = claiming open
template-standing-paused = claiming paused
template-standing-not_started = not started
template-standing-ended = claiming ended

## List
template-standing = Claiming
template-kind = Discount kind
template-name-contains = Name contains
template-none-match = No template matches.
template-unknown-filter = A filter could not be read; please choose again.
template-name = Name
template-rule = Rule
template-stock-heading = Claimed / total / left
template-stock-figures = { $claimed } / { $total } / { $left }
template-unlimited = unlimited
template-coupons-by-status = Coupons issued

## Create form
template-preview = Rule preview
template-preview-empty = Fill in the kind and the amount, then press "Preview" to see the rule.
template-preview-button = Preview
template-create-button = Create template
template-choose = Choose
template-value-yuan = Amount off (yuan)
template-value-hint = For amount off, like 50 or 49.90
template-percent-off = Percent off (1-100)
template-percent-hint = For percent off, 1-100; 15 means 15% off
template-max-discount-yuan = Largest discount (yuan)
template-optional = optional
template-min-order-yuan = Minimum order (yuan)
template-min-order-hint = Empty: no minimum
template-categories = Categories
template-categories-hint = Separated by commas; empty: every category
template-validity = Validity
template-validity-hint = Give the days after claiming for a relative validity; otherwise give the end of a fixed window. The start is optional.
template-valid-days = Valid for days after claiming
template-valid-from = Starts
template-valid-until = Ends
template-business-time = in the business time zone
template-total-stock = Total stock
template-stock-unlimited = Unlimited stock
template-alone = Cannot be combined with other coupons (the order's only coupon)
template-per-user-limit = Limit per customer
template-per-user-hint = Empty: no limit
template-claim-ends-at = Claiming ends
template-claim-ends-hint = Optional: claiming stops then; coupons already claimed are unaffected
template-needs-operator = Managing templates needs the operator or admin role.
template-created = Template "{ $name }" created.

## Messages beside the create form's fields
template-error-name = Give a name (1-200 characters).
template-error-kind = Choose the discount kind.
template-error-value = Give the amount off, like 50 or 49.90 (at most two decimals, more than 0).
template-error-percent-off = Give the percent off as a whole number from 1 to 100.
template-error-max-discount = Give the largest discount as an amount, like 30 or 29.90 (at most two decimals, more than 0).
template-error-min-order = Give the minimum order as an amount, like 300 or 299.90 (at most two decimals).
template-error-categories = At most 50 categories, each at most 64 characters.
template-error-valid-days = Give the days after claiming as a whole number from 1 to 3660.
template-error-valid-from = The start is not a time, or is after the end.
template-error-valid-until = Give the end (after the start and after now), or the days after claiming.
template-error-total-stock = Give the total stock as a whole number from 1 to 1,000,000,000, or tick unlimited stock.
template-error-per-user-limit = Give the limit per customer as a whole number from 1 to 10,000, or leave it empty.
template-error-claim-ends-at = The end of claiming must be in the future.
template-error-form = This could not be saved; please check what was typed.
template-error-reason = Please give a reason.

## Detail page
template-paused-at = Paused at
template-created-at = Created
template-its-coupons = Its coupons
template-history = Change history
template-no-history = No changes recorded yet.
template-change = Change
template-end-claiming = End claiming early
template-safe-edit = Rename, add stock or change the budget
template-change-part = { $field }: { $value }
template-change-separator = {"; "}
template-manage = Manage
template-reason = Reason (required, kept in the change history)
template-pause = Pause claiming
template-resume = Resume claiming
template-end-claiming-at = End claiming early at
template-end-at-button = End claiming at this time
template-end-now-button = End claiming now
template-save = Save changes
template-stock-only-grows = Stock can only grow, and never below the { $claimed } already claimed.
template-unlimited-stays = Stock is unlimited and stays unlimited.
template-paused-flash = Claiming of template "{ $name }" paused.
template-resumed-flash = Claiming of template "{ $name }" resumed.
template-claiming-ends-flash = End of claiming set for template "{ $name }".
template-saved-flash = Template "{ $name }" saved.
template-edit = Edit template
template-terms = Coupon terms
template-terms-locked = Coupons have been claimed; issued coupons keep their terms, so the terms cannot change. You can still rename, add stock, change the budget or end claiming early.
template-stock-any-before-claim = No coupon has been claimed yet: the stock can be set to any number or unlimited.
template-duplicate = Duplicate as a new template
template-copy-name = { $name } (copy)

## Why an edit is refused (domain::template::EditRefusal)
template-edit-refusal-stock-may-only-grow = Stock can only grow (unlimited stock stays unlimited).
template-edit-refusal-claim-end-passed = The end of claiming must be in the future.
template-edit-refusal-below-claimed = Stock cannot go below what was already claimed.
template-edit-refusal-unsafe-field = This would change coupons already issued, so it cannot be changed.
template-edit-refusal-changed-meanwhile = Someone changed this template a moment ago; reload the page and try again.
template-edit-refusal-already-claimed = Coupons have been claimed; issued coupons keep their terms, so the terms cannot change.
template-edit-refusal-no-budget = This template has no budget: a budget can only be set before its first claim.
template-edit-refusal-budget-below-used = The budget cannot go below what its coupons hold or gave.
template-budget-edit-hint = { $used } used; raise it, or lower it to no less than that.

## The staff log's template actions (service::templates::actions)
staff-action-template_create = template created
staff-action-template_edit = template edited
staff-action-template_pause = claiming paused
staff-action-template_resume = claiming resumed
rule-shop = shop { $shop } only
rule-skus = only SKU { $list }
rule-exclude-skus = except SKU { $list }
rule-partial-refund-proportional = partial refunds return their share
rule-partial-refund-clawback = a partial refund below the minimum spend takes the discount back
rule-not-stackable = cannot be combined with other coupons
partial-refund-rule-proportional = share returned
partial-refund-rule-clawback = taken back below the minimum
template-lines = Lines it covers, and partial refunds
template-shop = Shop (a shop coupon)
template-shop-hint = Empty for a platform coupon, usable on any shop's lines
template-skus = Only SKUs
template-skus-hint = Separate several with commas or spaces; empty for any
template-exclude-skus = Except SKUs
template-partial-refund-rule = Discount on a partial refund
template-partial-refund-hint = What happens when the items kept no longer reach the minimum spend
template-error-shop = A shop id is at most 128 characters, without spaces.
template-error-skus = Each SKU is at most 128 characters, without spaces; at most 100 in each field.
template-error-partial-refund-rule = Choose how partial refunds work from the list.
template-budget = Budget
template-budget-yuan = Budget (yuan)
template-budget-hint = The discount all its coupons may give together; empty: no budget. An order past it is refused.
template-budget-figures = { $budget }, { $used } used ({ $percent }%)
template-no-budget = No budget
template-error-budget = Enter the budget in yuan, greater than 0, or leave it empty.
