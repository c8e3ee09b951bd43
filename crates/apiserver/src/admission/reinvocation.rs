//! Reinvocation of mutating admission (upstream's `ReinvocationContext`
//! and the reinvocation handler): when a mutating webhook or policy changes
//! the object, the mutating plugins run a second time, and webhooks and
//! policies with `reinvocationPolicy: IfNeeded` that ran before the change
//! are called again in that pass.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// What one request's admission remembers between the two passes.
#[derive(Debug, Clone, Default)]
pub struct ReinvocationContext {
    is_reinvoke: bool,
    should_reinvoke: bool,
    /// The state of the plugins that reinvoke their hooks, by plugin name.
    plugins: BTreeMap<&'static str, HookReinvocation>,
}

impl ReinvocationContext {
    /// Whether this is the second pass.
    pub fn is_reinvoke(&self) -> bool {
        self.is_reinvoke
    }

    /// Asks for a second pass: a hook changed the object.
    pub fn set_should_reinvoke(&mut self) {
        self.should_reinvoke = true;
    }

    pub fn should_reinvoke(&self) -> bool {
        self.should_reinvoke
    }

    /// Starts the second pass (the chain does).
    pub fn set_is_reinvoke(&mut self) {
        self.is_reinvoke = true;
    }

    /// The hook state of `plugin`, taken out to be updated while the
    /// attributes are (see [`Self::put`]); empty the first time.
    pub fn take(&mut self, plugin: &'static str) -> HookReinvocation {
        self.plugins.remove(plugin).unwrap_or_default()
    }

    /// Keeps `plugin`'s hook state for the next pass.
    pub fn put(&mut self, plugin: &'static str, state: HookReinvocation) {
        self.plugins.insert(plugin, state);
    }
}

/// Which of a plugin's hooks (webhooks, policy bindings) are to be called
/// again, by their keys (upstream's webhook and policy reinvoke contexts).
#[derive(Debug, Clone, Default)]
pub struct HookReinvocation {
    /// The object as the plugin left it, kept only while a hook may need
    /// reinvoking.
    last_output: Option<Value>,
    /// Hooks asking for reinvocation that ran after the last change.
    previously_invoked: BTreeSet<String>,
    /// Hooks to call again in the second pass.
    reinvoke: BTreeSet<String>,
}

impl HookReinvocation {
    /// Starts a pass over the hooks: in the second pass, a change made
    /// since this plugin last ran (by another plugin) calls for every hook
    /// that asked for it.
    pub fn begin(&mut self, is_reinvoke: bool, object: Option<&Value>) {
        if is_reinvoke && self.last_output.as_ref() != object {
            self.require_reinvoking_previously_invoked();
        }
    }

    /// Whether the hook `key` is called in the second pass.
    pub fn should_reinvoke(&self, key: &str) -> bool {
        self.reinvoke.contains(key)
    }

    /// A hook changed the object: those that ran before it and asked for
    /// it are called again.
    pub fn require_reinvoking_previously_invoked(&mut self) {
        self.reinvoke.append(&mut self.previously_invoked);
    }

    /// A hook asking for reinvocation (`IfNeeded`) ran.
    pub fn invoked_reinvocable(&mut self, key: String) {
        self.previously_invoked.insert(key);
    }

    /// Ends a pass: remembers the object when a later change could still
    /// call for a reinvocation (copying it only then).
    pub fn end(&mut self, object: Option<&Value>) {
        self.last_output = if self.previously_invoked.is_empty() {
            None
        } else {
            object.cloned()
        };
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn hooks_before_a_change_are_reinvoked_and_not_the_changer() {
        let mut state = HookReinvocation::default();
        let obj = json!({"a": 1});
        state.begin(false, Some(&obj));
        state.invoked_reinvocable("first".into());
        // "second" changes the object, then asks for reinvocation itself.
        state.require_reinvoking_previously_invoked();
        state.invoked_reinvocable("second".into());
        state.end(Some(&obj));
        assert!(state.should_reinvoke("first"));
        assert!(!state.should_reinvoke("second"));
        // Another plugin changed the object since: "second" runs again too.
        state.begin(true, Some(&json!({"a": 2})));
        assert!(state.should_reinvoke("second"));
    }

    #[test]
    fn an_unchanged_object_reinvokes_nothing_more() {
        let mut state = HookReinvocation::default();
        let obj = json!({"a": 1});
        state.invoked_reinvocable("only".into());
        state.end(Some(&obj));
        state.begin(true, Some(&obj));
        assert!(!state.should_reinvoke("only"));
        let mut nothing = HookReinvocation::default();
        nothing.end(Some(&obj));
        assert!(nothing.last_output.is_none());
    }

    #[test]
    fn plugin_state_is_kept_between_passes() {
        let mut cx = ReinvocationContext::default();
        let mut state = cx.take("MutatingAdmissionWebhook");
        state.invoked_reinvocable("hook".into());
        state.require_reinvoking_previously_invoked();
        cx.put("MutatingAdmissionWebhook", state);
        cx.set_should_reinvoke();
        cx.set_is_reinvoke();
        assert!(cx.is_reinvoke() && cx.should_reinvoke());
        assert!(cx.take("MutatingAdmissionWebhook").should_reinvoke("hook"));
        assert!(!cx.take("MutatingAdmissionPolicy").should_reinvoke("hook"));
    }
}
