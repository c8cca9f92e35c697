// Sign in with an API token: the API sets a session cookie; pages then use it with a CSRF header.
const form = document.getElementById("sign-in-form");
const error = document.getElementById("token-error");
const input = document.getElementById("token");

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  error.textContent = "";
  input.removeAttribute("aria-invalid");
  const res = await fetch("/v1/auth/session", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token: input.value.trim() }),
  });
  if (res.ok) {
    location.assign(form.dataset.next || "/ui/types");
    return;
  }
  const body = await res.json().catch(() => ({}));
  error.textContent = res.status === 422 ? "Paste a token first." : body.message || `Sign-in failed (HTTP ${res.status}).`;
  input.setAttribute("aria-invalid", "true");
  input.focus();
});
