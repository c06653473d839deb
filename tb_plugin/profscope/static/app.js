import{a as L,b as P,c as T}from"./chunk-MZHCCO5O.js";import{a as r,c as f,d as w,e as $}from"./chunk-7F5NUVUW.js";import{a as R,b as m}from"./chunk-ANF55BQM.js";var E=["run","session","host","tool"];function C(i){return[...new Set(i.keys())].sort((t,s)=>{let o=E.indexOf(t),n=E.indexOf(s);return(o<0?99:o)-(n<0?99:n)||t.localeCompare(s)}).map(t=>`${encodeURIComponent(t)}=${encodeURIComponent(i.get(t)??"")}`).join("&")}function M(i,e){let t=i.startsWith("#")?i.slice(1):i;if(e){if(t!==e&&!t.startsWith(`${e}&`))return new URLSearchParams;t=t.slice(e.length+1)}return new URLSearchParams(t)}function I(i,e){let t=C(e);return i?t?`#${i}&${t}`:`#${i}`:`#${t}`}var b=class{constructor(e,t,s){this.where=e;this.win=t;this.prefix=s}where;win;prefix;read(){return M(this.win.location.hash,this.prefix)}write(e){let t=I(this.prefix,e),s=this.win.location.hash;t!==s&&(this.prefix&&s!==`#${this.prefix}`&&!s.startsWith(`#${this.prefix}&`)||this.win.history.replaceState(this.win.history.state,"",t))}href(e){let t=new URL(this.win.location.href);return t.hash=I(this.prefix,e),t.href}listen(e){return this.win.addEventListener("hashchange",e),()=>this.win.removeEventListener("hashchange",e)}};function _(i,e){try{let t=i.top;if(!t||t===i)return null;let s=t.location.hash;return s===`#${e}`||s.startsWith(`#${e}&`)?t:null}catch{return null}}function U(i=window,e="profscope"){let t=_(i,e);return t?new b("top",t,e):new b("self",i,"")}var z=R({"./trace/index.ts":()=>import("./trace-RKVYZGOE.js"),"./xla/index.ts":()=>import("./xla-4LCYIPOA.js")});var v=[{id:"trace",title:"Trace"},{id:"overview",title:"Overview",planned:"Planned: a one-page summary of the selected host — step time and its breakdown (compute, communication, input, idle), device busy time, and the operations with the most self time, each linking into the Trace tab at the matching time range."},{id:"roofline",title:"Roofline",planned:"Planned: every XLA or GPU operation placed by its arithmetic intensity (FLOPs per byte accessed) against its achieved FLOP/s, under the device's compute and memory-bandwidth roofs, from the cost statistics recorded in the profile; operations without such statistics will be listed as not observed."},{id:"xla",title:"XLA"}];function y(i){return m.includes(i)}async function F(i){return y(i)?await z(`./${i}/index.ts`):null}var V={xplane:"XPlane",chrome_trace:"Chrome trace",xla_metrics:"XLA logs",xla_debug:"XLA logs",xla_graphs:"XLA logs"};function H(i){return i.sessions.flatMap(e=>e.hosts.flatMap(t=>t.files))}function A(i){let e=H(i),t=[...new Set(e.filter(n=>!n.error&&n.format).map(n=>V[n.format]??n.format))],s=e.filter(n=>n.error).length,o=[t.length?`${i.name} — ${t.join(", ")}`:i.name];return i.sessions.length>1&&o.push(`${i.sessions.length} sessions`),s&&o.push(`${s} unreadable file${s>1?"s":""}`),o.join(" · ")}var W=new Set(["run","session","host","tool"]);function j(i){return v.some(e=>e.id===i)}function S(i){let e=new Set;for(let t of i)for(let s of t.tools)j(s)&&e.add(s);return e}var x=class{constructor(e,t){this.client=e;this.store=t;this.pickers=r("div",{class:"ps-pickers"},r("label",{},r("span",{},"Run"),this.runSelect),r("label",{},r("span",{},"Session"),this.sessionSelect),r("label",{},r("span",{},"Host"),this.hostSelect));let s=r("button",{class:"ps-button",type:"button",title:"Reload the list of runs","data-testid":"reload-runs"},"Reload runs");s.addEventListener("click",()=>{this.loadRuns()}),this.linkButton.addEventListener("click",()=>{this.copyLink()}),this.linkButton.title=t.where==="top"?"The address bar always holds a link to this view; this copies it":"Copy a link that reopens this view",this.el=r("div",{class:"ps-app"},r("header",{class:"ps-bar"},this.pickers,this.tabs,r("span",{class:"ps-spacer"}),this.linkButton,s),this.notices,this.main),this.runSelect.addEventListener("change",()=>this.pick({run:this.runSelect.value})),this.sessionSelect.addEventListener("change",()=>this.pick({session:this.sessionSelect.value})),this.hostSelect.addEventListener("change",()=>this.pick({hosts:this.hostSelect.value.split(",")})),t.listen(()=>this.applyFragment())}client;store;runs=null;sel=null;viewParams=new URLSearchParams;views=new Map;subjectKey="";runsAbort=null;logdirErrors=[];el;runSelect=r("select",{"data-testid":"run-select","aria-label":"Run"});sessionSelect=r("select",{"data-testid":"session-select","aria-label":"Session"});hostSelect=r("select",{"data-testid":"host-select","aria-label":"Host"});tabs=r("nav",{class:"ps-tabs",role:"tablist"});notices=r("div",{class:"ps-notices"});main=r("main",{class:"ps-main"});linkButton=r("button",{class:"ps-button","data-testid":"copy-link",type:"button"},"Copy link");pickers;async loadRuns(){this.runsAbort?.abort();let e=this.runsAbort=new AbortController;this.pickers.hidden=!0,this.setMessage(r("div",{class:"ps-loading","data-testid":"runs-loading"},"Loading runs…"));try{this.runs=await this.client.runs(e.signal)}catch(t){if($(t))return;let s=r("button",{class:"ps-button",type:"button"},"Retry");s.addEventListener("click",()=>{this.loadRuns()}),this.setMessage(r("div",{class:"ps-error",role:"alert","data-testid":"runs-error"},`Could not list runs: ${w(t)} `,s));return}if(this.logdirErrors=this.runs.errors??[],!this.runs.runs.length){let t=this.runs.empty_message||`No profiles found under ${this.runs.logdir}. Write a profile there (TensorFlow, JAX, PyTorch or PyTorch/XLA) and reload.`;this.renderTabs(),this.renderNotices([],null),this.setMessage(r("div",{class:"ps-empty","data-testid":"empty-logdir"},t));return}this.pickers.hidden=!1,this.applyFragment()}setMessage(e){this.unmountAll(),f(this.main),this.main.append(e)}applyFragment(){if(!this.runs||!this.runs.runs.length)return;let e=this.store.read(),t=new URLSearchParams;for(let[o,n]of e)W.has(o)||t.set(o,n);this.viewParams=t;let s=e.get("host");this.select({run:e.get("run")??"",session:e.get("session")??"",hosts:s?s.split(","):[],tool:j(e.get("tool"))?e.get("tool"):"trace"},!0)}pick(e){if(!this.sel)return;let t={...this.sel,...e};e.run&&(t.session=""),(e.run||e.session)&&(t.hosts=[]),this.viewParams=new URLSearchParams,this.select(t,!1)}select(e,t){let s=this.runs.runs,o=s.find(d=>d.name===e.run)??s[0],n=o.sessions.find(d=>d.name===e.session)??o.sessions[0],h=new Set(n?n.hosts.map(d=>d.name):[]),l=e.hosts.filter(d=>h.has(d));!l.length&&n?.hosts.length&&(l=[n.hosts[0].name]);let a=n?n.hosts.filter(d=>l.includes(d.name)):[],c=S(a),u=e.tool;c.has(u)||(u=v.find(d=>c.has(d.id))?.id??e.tool);let p=t&&e.run!==""&&(o.name!==e.run||e.session!==""&&n?.name!==e.session);p&&(this.viewParams=new URLSearchParams),this.sel={run:o.name,session:n?n.name:"",hosts:l,tool:u},this.renderPickers(o,n),this.renderTabs(),this.renderNotices(a,p?e:null),this.writeFragment(),this.showTool(a,c)}renderPickers(e,t){let s=this.sel,o=(a,c,u)=>{f(a);for(let p of c)a.append(r("option",{value:p.value},p.text));a.value=u,a.disabled=c.length<2},n=this.runs.runs;o(this.runSelect,n.map(a=>({value:a.name,text:A(a)})),e.name),o(this.sessionSelect,e.sessions.map(a=>({value:a.name,text:a.name})),s.session);let h=t?t.hosts:[],l=h.map(a=>({value:a.name,text:a.name}));if(h.length>1){let a=h.map(u=>u.name).join(",");l.unshift({value:a,text:`All ${h.length} hosts (merged timeline)`});let c=s.hosts.join(",");s.hosts.length>1&&c!==a&&l.push({value:c,text:`${s.hosts.length} hosts: ${c}`})}o(this.hostSelect,l,s.hosts.join(","))}renderTabs(){f(this.tabs);let e=this.sel,t=e?this.currentSession():void 0,s=t&&e?t.hosts.filter(n=>e.hosts.includes(n.name)):[],o=S(s);for(let n of v){let h=e?.tool===n.id,l=o.has(n.id),a=r("button",{type:"button",role:"tab",class:`ps-tab${h?" active":""}`,"data-testid":`tab-${n.id}`,"aria-selected":h?"true":"false",disabled:!l,title:l?n.title:`${n.title}: no data for this tool in the selected host`},n.title);a.addEventListener("click",()=>this.switchTool(n.id)),this.tabs.append(a)}}renderNotices(e,t){f(this.notices);for(let s of this.logdirErrors)this.notices.append(r("div",{class:"ps-notice",role:"status"},s));t&&this.notices.append(r("div",{class:"ps-notice"},`The link names run "${t.run}"${t.session?`, session "${t.session}"`:""}, which is not in this logdir; showing the first run instead.`));for(let s of e)for(let o of s.files)o.error&&this.notices.append(r("div",{class:"ps-notice",role:"status"},`${s.name}: ${o.path} could not be read: ${o.error}`))}currentSession(){let e=this.sel;if(!(!e||!this.runs))return this.runs.runs.find(t=>t.name===e.run)?.sessions.find(t=>t.name===e.session)}subject(){let e=this.sel;return{run:e.run,session:e.session,hosts:e.hosts}}writeFragment(){let e=this.sel;if(!e)return;let t=new URLSearchParams({run:e.run,session:e.session,host:e.hosts.join(","),tool:e.tool});for(let[s,o]of this.viewParams)t.set(s,o);this.store.write(t)}currentParams(){let e=this.sel,t=new URLSearchParams({run:e.run,session:e.session,host:e.hosts.join(","),tool:e.tool});for(let[s,o]of this.viewParams)t.set(s,o);return t}async copyLink(){if(!this.sel)return;let e=this.store.href(this.currentParams());try{await navigator.clipboard.writeText(e),this.linkButton.textContent="Link copied"}catch{window.prompt("Link to this view:",e)}setTimeout(()=>{this.linkButton.textContent="Copy link"},1500)}switchTool(e,t){if(!this.sel)return;this.sel={...this.sel,tool:e},t&&(this.viewParams=new URLSearchParams(t)),this.renderTabs(),this.writeFragment();let s=this.currentSession(),o=s?s.hosts.filter(n=>this.sel.hosts.includes(n.name)):[];this.showTool(o,S(o),t!==void 0)}unmountAll(){for(let e of this.views.values())e.abort.abort(),e.instance?.unmount?.(),e.container.remove();this.views.clear(),this.subjectKey=""}showTool(e,t,s=!1){let o=this.sel,n=JSON.stringify(this.subject());n!==this.subjectKey&&(this.unmountAll(),f(this.main),this.subjectKey=n);for(let p of this.views.values())p.container.hidden=p.tool!==o.tool;let h=this.views.get(o.tool);if(h){h.instance?.show?.(),(s||this.viewParams.toString())&&h.instance?.update?.(new URLSearchParams(this.viewParams));return}let l=r("section",{class:"ps-view","data-testid":`view-${o.tool}`,role:"tabpanel"}),a={tool:o.tool,container:l,instance:null,abort:new AbortController};this.views.set(o.tool,a),this.main.append(l);let c=v.find(p=>p.id===o.tool);if(!t.has(o.tool)){l.append(r("div",{class:"ps-empty"},`${c?.title??o.tool}: the selected host has no data for this tool.`));return}if(!y(o.tool)){l.append(r("div",{class:"ps-planned","data-testid":"planned"},r("h2",{},c?.title??o.tool),r("p",{},c?.planned??"")));return}l.append(r("div",{class:"ps-loading"},"Loading view…"));let u=this.subject();F(o.tool).then(p=>{a.abort.signal.aborted||!p||(f(l),a.instance=p.mount(l,{client:this.client,subject:u,hosts:e,params:new URLSearchParams(this.viewParams),signal:a.abort.signal,setParams:d=>{if(!a.abort.signal.aborted){for(let[g,k]of Object.entries(d))k===void 0?this.viewParams.delete(g):this.viewParams.set(g,k);this.writeFragment()}},navigate:(d,g)=>this.switchTool(d,g)}))},p=>{if(a.abort.signal.aborted)return;f(l);let d=p instanceof L?p.message:`could not load the ${o.tool} view (${w(p)})`;l.append(r("div",{class:"ps-error",role:"alert"},d))})}};var O=`/* profscope: shell and trace viewer. Scoped by class prefixes ps- (shell) and tv- (trace view). */
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
.ps-loading, .ps-empty, .ps-planned { padding: 24px; color: #4b5563; }
.ps-planned { max-width: 720px; }
.ps-empty { white-space: pre-wrap; }
.ps-planned h2 { margin-top: 0; }
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
.tv-progress { margin-top: 8px; }
.tv-progress-track { width: 320px; height: 6px; background: #e5e7eb; border-radius: 3px; overflow: hidden; }
.tv-progress-bar { height: 100%; background: #1a73e8; }
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
`;function de(i={}){let e=document.createElement("style");e.textContent=O,document.head.append(e);let t=i.root??document.body;t.classList.add("ps-root");let s=new T(i.base??P(import.meta.url)),o=new x(s,U());return t.append(o.el),o.loadRuns(),o}export{de as render};
