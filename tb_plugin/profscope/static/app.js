import{a as P,b as T,c as $}from"./chunk-MZHCCO5O.js";import{a as r,c as f,d as y,e as E}from"./chunk-7F5NUVUW.js";import{a as L,b as m}from"./chunk-5N435QRN.js";var I=["run","session","host","tool"];function z(n){return[...new Set(n.keys())].sort((e,s)=>{let o=I.indexOf(e),i=I.indexOf(s);return(o<0?99:o)-(i<0?99:i)||e.localeCompare(s)}).map(e=>`${encodeURIComponent(e)}=${encodeURIComponent(n.get(e)??"")}`).join("&")}function A(n,t){let e=n.startsWith("#")?n.slice(1):n;if(t){if(e!==t&&!e.startsWith(`${t}&`))return new URLSearchParams;e=e.slice(t.length+1)}return new URLSearchParams(e)}function U(n,t){let e=z(t);return n?e?`#${n}&${e}`:`#${n}`:`#${e}`}var b=class{constructor(t,e,s){this.where=t;this.win=e;this.prefix=s}where;win;prefix;read(){return A(this.win.location.hash,this.prefix)}write(t){let e=U(this.prefix,t),s=this.win.location.hash;e!==s&&(this.prefix&&s!==`#${this.prefix}`&&!s.startsWith(`#${this.prefix}&`)||this.win.history.replaceState(this.win.history.state,"",e))}href(t){let e=new URL(this.win.location.href);return e.hash=U(this.prefix,t),e.href}listen(t){return this.win.addEventListener("hashchange",t),()=>this.win.removeEventListener("hashchange",t)}};function _(n,t){try{let e=n.top;if(!e||e===n)return null;let s=e.location.hash;return s===`#${t}`||s.startsWith(`#${t}&`)?e:null}catch{return null}}function j(n=window,t="profscope"){let e=_(n,t);return e?new b("top",e,t):new b("self",n,"")}var H=L({"./compare/index.ts":()=>import("./compare-FFCWBQJH.js"),"./overview/index.ts":()=>import("./overview-W2AIY5ES.js"),"./roofline/index.ts":()=>import("./roofline-ZTOAEYSW.js"),"./trace/index.ts":()=>import("./trace-ZEYFLTEM.js"),"./xla/index.ts":()=>import("./xla-5JAXRHTU.js")});var v=m;function S(n){return v.some(t=>t.id===n)}function x(n){let t=v.find(e=>e.id===n);if(!t)throw new Error(`unknown tool "${n}"; the tools are ${v.map(e=>e.id).join(", ")}`);return t}async function F(n){return x(n),await H(`./${n}/index.ts`)}function V(n){return n.sessions.flatMap(t=>t.hosts.flatMap(e=>e.files))}function B(n){return n.format_label??n.format??"unknown format"}function O(n){return n.label??n.name}function C(n){let t=V(n),e=[...new Set(t.filter(i=>!i.error&&i.format).map(B))],s=t.filter(i=>i.error).length,o=[e.length?`${n.name} — ${e.join(", ")}`:n.name];return n.sessions.length>1&&o.push(`${n.sessions.length} sessions`),s&&o.push(`${s} unreadable file${s>1?"s":""}`),o.join(" · ")}var W=new Set(["run","session","host","tool"]);function k(n){let t=new Set;for(let e of n)for(let s of e.tools)S(s)&&t.add(s);return t}var w=class{constructor(t,e){this.client=t;this.store=e;this.pickers=r("div",{class:"ps-pickers"},r("label",{},r("span",{},"Run"),this.runSelect),r("label",{},r("span",{},"Session"),this.sessionSelect),r("label",{},r("span",{},"Host"),this.hostSelect));let s=r("button",{class:"ps-button",type:"button",title:"Reload the list of runs","data-testid":"reload-runs"},"Reload runs");s.addEventListener("click",()=>{this.loadRuns()}),this.linkButton.addEventListener("click",()=>{this.copyLink()}),this.linkButton.title=e.where==="top"?"The address bar always holds a link to this view; this copies it":"Copy a link that reopens this view",this.el=r("div",{class:"ps-app"},r("header",{class:"ps-bar"},this.pickers,this.tabs,r("span",{class:"ps-spacer"}),this.linkButton,s),this.notices,this.main),this.runSelect.addEventListener("change",()=>this.pick({run:this.runSelect.value})),this.sessionSelect.addEventListener("change",()=>this.pick({session:this.sessionSelect.value})),this.hostSelect.addEventListener("change",()=>this.pick({hosts:this.hostSelect.value.split(",")})),e.listen(()=>this.applyFragment())}client;store;runs=null;sel=null;viewParams=new URLSearchParams;views=new Map;subjectKey="";runsAbort=null;logdirErrors=[];el;runSelect=r("select",{"data-testid":"run-select","aria-label":"Run"});sessionSelect=r("select",{"data-testid":"session-select","aria-label":"Session"});hostSelect=r("select",{"data-testid":"host-select","aria-label":"Host"});tabs=r("nav",{class:"ps-tabs",role:"tablist"});notices=r("div",{class:"ps-notices"});main=r("main",{class:"ps-main"});linkButton=r("button",{class:"ps-button","data-testid":"copy-link",type:"button"},"Copy link");pickers;async loadRuns(){this.runsAbort?.abort();let t=this.runsAbort=new AbortController;this.pickers.hidden=!0,this.setMessage(r("div",{class:"ps-loading","data-testid":"runs-loading"},"Loading runs…"));try{this.runs=await this.client.runs(t.signal)}catch(e){if(E(e))return;let s=r("button",{class:"ps-button",type:"button"},"Retry");s.addEventListener("click",()=>{this.loadRuns()}),this.setMessage(r("div",{class:"ps-error",role:"alert","data-testid":"runs-error"},`Could not list runs: ${y(e)} `,s));return}if(this.logdirErrors=this.runs.errors??[],!this.runs.runs.length){let e=this.runs.empty_message||`No profiles found under ${this.runs.logdir}. Write a profile there (TensorFlow, JAX, PyTorch or PyTorch/XLA) and reload.`;this.renderTabs(),this.renderNotices([],null),this.setMessage(r("div",{class:"ps-empty","data-testid":"empty-logdir"},e));return}this.pickers.hidden=!1,this.applyFragment()}setMessage(t){this.unmountAll(),f(this.main),this.main.append(t)}applyFragment(){if(!this.runs||!this.runs.runs.length)return;let t=this.store.read(),e=new URLSearchParams;for(let[i,d]of t)W.has(i)||e.set(i,d);this.viewParams=e;let s=t.get("host"),o=t.get("tool");this.select({run:t.get("run")??"",session:t.get("session")??"",hosts:s?s.split(","):[],tool:S(o)?o:"trace"},!0)}pick(t){if(!this.sel)return;let e={...this.sel,...t};t.run&&(e.session=""),(t.run||t.session)&&(e.hosts=[]),this.viewParams=new URLSearchParams,this.select(e,!1)}select(t,e){let s=this.runs.runs,o=s.find(p=>p.name===t.run)??s[0],i=o.sessions.find(p=>p.name===t.session)??o.sessions[0],d=new Set(i?i.hosts.map(p=>p.name):[]),l=t.hosts.filter(p=>d.has(p));!l.length&&i?.hosts.length&&(l=[i.hosts[0].name]);let a=i?i.hosts.filter(p=>l.includes(p.name)):[],h=k(a),u=t.tool;h.has(u)||(u=v.find(p=>h.has(p.id))?.id??t.tool);let c=e&&t.run!==""&&(o.name!==t.run||t.session!==""&&i?.name!==t.session);c&&(this.viewParams=new URLSearchParams),this.sel={run:o.name,session:i?i.name:"",hosts:l,tool:u},this.renderPickers(o,i),this.renderTabs(),this.renderNotices(a,c?t:null),this.writeFragment(),this.showTool(a,h)}renderPickers(t,e){let s=this.sel,o=(a,h,u)=>{f(a);for(let c of h)a.append(r("option",{value:c.value},c.text));a.value=u,a.disabled=h.length<2},i=this.runs.runs;o(this.runSelect,i.map(a=>({value:a.name,text:C(a)})),t.name),o(this.sessionSelect,t.sessions.map(a=>({value:a.name,text:O(a)})),s.session);let d=e?e.hosts:[],l=d.map(a=>({value:a.name,text:a.name}));if(d.length>1){let a=d.map(u=>u.name).join(",");l.unshift({value:a,text:`All ${d.length} hosts (merged timeline)`});let h=s.hosts.join(",");s.hosts.length>1&&h!==a&&l.push({value:h,text:`${s.hosts.length} hosts: ${h}`})}o(this.hostSelect,l,s.hosts.join(","))}renderTabs(){f(this.tabs);let t=this.sel,e=t?this.currentSession():void 0,s=e&&t?e.hosts.filter(i=>t.hosts.includes(i.name)):[],o=k(s);for(let i of v){let d=t?.tool===i.id,l=o.has(i.id),a=r("button",{type:"button",role:"tab",class:`ps-tab${d?" active":""}`,"data-testid":`tab-${i.id}`,"aria-selected":d?"true":"false",disabled:!l,title:l?i.title:`${i.title}: no data for this tool in the selected host`},i.title);a.addEventListener("click",()=>this.switchTool(i.id)),this.tabs.append(a)}}renderNotices(t,e){f(this.notices);for(let s of this.logdirErrors)this.notices.append(r("div",{class:"ps-notice",role:"status"},s));e&&this.notices.append(r("div",{class:"ps-notice"},`The link names run "${e.run}"${e.session?`, session "${e.session}"`:""}, which is not in this logdir; showing the first run instead.`));for(let s of t)for(let o of s.files)o.error&&this.notices.append(r("div",{class:"ps-notice",role:"status"},`${s.name}: ${o.path} could not be read: ${o.error}`))}currentSession(){let t=this.sel;if(!(!t||!this.runs))return this.runs.runs.find(e=>e.name===t.run)?.sessions.find(e=>e.name===t.session)}subject(){let t=this.sel;return{run:t.run,session:t.session,hosts:t.hosts}}writeFragment(){let t=this.sel;if(!t)return;let e=new URLSearchParams({run:t.run,session:t.session,host:t.hosts.join(","),tool:t.tool});for(let[s,o]of this.viewParams)e.set(s,o);this.store.write(e)}currentParams(){let t=this.sel,e=new URLSearchParams({run:t.run,session:t.session,host:t.hosts.join(","),tool:t.tool});for(let[s,o]of this.viewParams)e.set(s,o);return e}async copyLink(){if(!this.sel)return;let t=this.store.href(this.currentParams());try{await navigator.clipboard.writeText(t),this.linkButton.textContent="Link copied"}catch{window.prompt("Link to this view:",t)}setTimeout(()=>{this.linkButton.textContent="Copy link"},1500)}switchTool(t,e){if(!this.sel)return;this.sel={...this.sel,tool:t},e&&(this.viewParams=new URLSearchParams(e)),this.renderTabs(),this.writeFragment();let s=this.currentSession(),o=s?s.hosts.filter(i=>this.sel.hosts.includes(i.name)):[];this.showTool(o,k(o),e!==void 0)}unmountAll(){for(let t of this.views.values())t.abort.abort(),t.instance?.unmount?.(),t.container.remove();this.views.clear(),this.subjectKey=""}showTool(t,e,s=!1){let o=this.sel,i=JSON.stringify(this.subject());i!==this.subjectKey&&(this.unmountAll(),f(this.main),this.subjectKey=i);for(let c of this.views.values())c.container.hidden=c.tool!==o.tool;let d=this.views.get(o.tool);if(d){d.instance?.show?.(),(s||this.viewParams.toString())&&d.instance?.update?.(new URLSearchParams(this.viewParams));return}let l=r("section",{class:"ps-view","data-testid":`view-${o.tool}`,role:"tabpanel"}),a={tool:o.tool,container:l,instance:null,abort:new AbortController};this.views.set(o.tool,a),this.main.append(l);let h=x(o.tool);if(!e.has(o.tool)){l.append(r("div",{class:"ps-empty"},`${h.title}: the selected host has no data for this tool.`));return}l.append(r("div",{class:"ps-loading"},"Loading view…"));let u=this.subject();F(o.tool).then(c=>{a.abort.signal.aborted||(f(l),a.instance=c.mount(l,{client:this.client,subject:u,hosts:t,params:new URLSearchParams(this.viewParams),signal:a.abort.signal,setParams:p=>{if(!a.abort.signal.aborted){for(let[g,R]of Object.entries(p))R===void 0?this.viewParams.delete(g):this.viewParams.set(g,R);this.writeFragment()}},navigate:(p,g)=>this.switchTool(x(p).id,g)}))},c=>{if(a.abort.signal.aborted)return;f(l);let p=c instanceof P?c.message:`could not load the ${o.tool} view (${y(c)})`;l.append(r("div",{class:"ps-error",role:"alert"},p))})}};var M=`/* profscope: shell and trace viewer. Scoped by class prefixes ps- (shell) and tv- (trace view). */
.ps-root {
  margin: 0;
  height: 100vh;
  font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: #1f2937;
  background: #fff;
  overflow: hidden;
}
.ps-root [hidden] { display: none !important; }
.ps-app { display: flex; flex-direction: column; height: 100%; }
.ps-bar {
  display: flex; align-items: center; gap: 12px; flex-wrap: wrap;
  padding: 6px 10px; border-bottom: 1px solid #dde2e8; background: #f8f9fb;
}
.ps-pickers { display: flex; gap: 10px; flex-wrap: wrap; }
.ps-pickers label { display: flex; align-items: center; gap: 4px; }
.ps-pickers label > span { color: #6b7280; font-size: 12px; }
.ps-pickers select { max-width: 280px; font: inherit; padding: 2px 4px; }
.ps-tabs { display: flex; gap: 2px; }
.ps-tab {
  font: inherit; padding: 4px 12px; border: 1px solid transparent; border-radius: 4px;
  background: none; cursor: pointer; color: #374151;
}
.ps-tab:hover:not(:disabled) { background: #eef1f5; }
.ps-tab.active { background: #fff; border-color: #c9d1dc; color: #0b57d0; font-weight: 600; }
.ps-tab:disabled { color: #a0a7b1; cursor: not-allowed; }
.ps-spacer { flex: 1; }
.ps-button {
  font: inherit; padding: 2px 10px; border: 1px solid #c9d1dc; border-radius: 4px;
  background: #fff; cursor: pointer;
}
.ps-button:hover { background: #eef1f5; }
.ps-notices:empty { display: none; }
.ps-notice { padding: 4px 10px; background: #fff8e1; border-bottom: 1px solid #f3e3a6; font-size: 12px; }
.ps-main { flex: 1; min-height: 0; position: relative; }
.ps-view { height: 100%; display: flex; flex-direction: column; }
.ps-view[hidden] { display: none; }
.ps-loading, .ps-empty { padding: 24px; color: #4b5563; }
.ps-empty { white-space: pre-wrap; }
.ps-error { padding: 12px 16px; color: #a50e0e; background: #fce8e6; border-radius: 4px; margin: 8px; }
kbd {
  font: 11px ui-monospace, monospace; padding: 0 4px; border: 1px solid #c9d1dc;
  border-bottom-width: 2px; border-radius: 3px; background: #fff;
}

.tv { display: flex; flex-direction: column; height: 100%; position: relative; outline: none; }
.tv-toolbar {
  display: flex; align-items: center; gap: 10px; padding: 4px 8px; border-bottom: 1px solid #e5e7eb;
  flex-wrap: wrap;
}
.tv-tools { display: flex; gap: 2px; }
.tv-tool {
  font: inherit; padding: 2px 8px; border: 1px solid #c9d1dc; background: #fff; cursor: pointer;
}
.tv-tool:first-child { border-radius: 4px 0 0 4px; }
.tv-tool:last-child { border-radius: 0 4px 4px 0; }
.tv-tool.active { background: #e8f0fe; border-color: #1a73e8; color: #0b57d0; }
.tv-toggle { display: flex; align-items: center; gap: 2px; cursor: pointer; }
.tv-searchbox { display: flex; align-items: center; gap: 4px; }
.tv-search { font: inherit; width: 220px; padding: 2px 6px; }
.tv-search-count { color: #4b5563; font-size: 12px; min-width: 40px; }
.tv-status { color: #6b7280; font-size: 12px; white-space: nowrap; }
.tv-notices:empty { display: none; }
.tv-notices details summary { cursor: pointer; }
.tv-body { flex: 1; min-height: 120px; display: flex; flex-direction: column; position: relative; }
.tv-axis { display: block; flex: none; width: 100%; height: 30px; }
.tv-scroll { flex: 1; overflow-y: auto; overflow-x: hidden; position: relative; min-height: 0; }
.tv-canvas { display: block; position: sticky; top: 0; cursor: default; touch-action: none; }
.tv-canvas.over-event { cursor: pointer; }
.tv-canvas.over-header { cursor: pointer; }
.tv-canvas[data-tool="pan"] { cursor: grab; }
.tv-canvas[data-tool="zoom"] { cursor: zoom-in; }
.tv-canvas[data-tool="timing"] { cursor: col-resize; }
.tv-canvas.grabbing { cursor: grabbing; }
.tv-overlay {
  position: absolute; inset: 0; display: flex; align-items: center; justify-content: center;
  background: rgba(255, 255, 255, 0.92);
}
.tv-splitter { height: 5px; cursor: row-resize; background: #e5e7eb; flex: none; }
.tv-details { height: min(230px, 32vh); overflow: auto; padding: 6px 12px; flex: none; font-size: 12px; }
.tv-details h3 { margin: 4px 0; font-size: 13px; }
.tv-details h4 { margin: 8px 0 2px; font-size: 12px; }
.tv-details-grid { display: grid; grid-template-columns: minmax(280px, 1fr) 2fr; gap: 16px; }
.tv-kv { border-collapse: collapse; }
.tv-kv th { text-align: left; color: #6b7280; font-weight: normal; padding: 1px 12px 1px 0; vertical-align: top; white-space: nowrap; }
.tv-kv td { padding: 1px 0; word-break: break-word; }
.tv-pre { margin: 0; white-space: pre-wrap; font: 11px ui-monospace, monospace; max-height: 160px; overflow: auto; }
.tv-flows ul { margin: 0; padding-left: 16px; }
.tv-summary { border-collapse: collapse; width: 100%; }
.tv-summary th { text-align: left; border-bottom: 1px solid #d1d5db; padding: 2px 8px; cursor: pointer; user-select: none; white-space: nowrap; }
.tv-summary td { padding: 1px 8px; border-bottom: 1px solid #f0f1f3; }
.tv-summary .num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.tv-hint { color: #6b7280; margin: 4px 0; }
.tv-tooltip {
  position: absolute; z-index: 5; pointer-events: none; background: #fff; border: 1px solid #c9d1dc;
  border-radius: 4px; padding: 4px 8px; box-shadow: 0 2px 6px rgba(0, 0, 0, 0.15); max-width: 320px;
  font-size: 12px; word-break: break-all;
}
.tv-help {
  position: absolute; inset: 0; z-index: 10; background: rgba(0, 0, 0, 0.35);
  display: flex; align-items: center; justify-content: center;
}
.tv-help[hidden] { display: none; }
.tv-help-box { background: #fff; border-radius: 8px; padding: 16px 24px; max-height: 90%; overflow: auto; }
.tv-help-box h2 { margin: 0 0 8px; font-size: 16px; }
.tv-help-keys th { text-align: left; padding: 2px 16px 2px 0; white-space: nowrap; }
`;function ct(n={}){let t=document.createElement("style");t.textContent=M,document.head.append(t);let e=n.root??document.body;e.classList.add("ps-root");let s=new $(n.base??T(import.meta.url)),o=new w(s,j());return e.append(o.el),o.loadRuns(),o}export{ct as render};
